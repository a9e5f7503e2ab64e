package eventplane_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
)

// TestConnectRetry: with nothing listening, ConnectRetry keeps trying
// (reporting each failed attempt) until its context ends, then says why;
// once a server listens on the port, it connects.
func TestConnectRetry(t *testing.T) {
	port := eventplanetest.FreePort(t)
	cfg := eventplane.DefaultConfig()
	cfg.URL, cfg.Logger = fmt.Sprintf("nats://127.0.0.1:%d", port), eventplanetest.Quiet

	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	attempts := 0
	_, err := eventplane.ConnectRetry(ctx, cfg, func(n int, err error) { attempts = n })
	if !errors.Is(err, context.DeadlineExceeded) || attempts < 2 {
		t.Fatalf("no server: %d attempts, err %v; want at least 2 and the context's deadline", attempts, err)
	}

	up := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		c, err := eventplane.ConnectRetry(context.Background(), cfg, func(n int, _ error) {
			if n == 1 {
				close(up)
			}
		})
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	<-up // the first attempt failed: the server comes up while it waits
	eventplanetest.Server(t, port)
	if err := <-done; err != nil {
		t.Fatalf("server up: %v", err)
	}
}
