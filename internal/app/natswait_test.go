package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
)

// TestServeWaitsForNATS: serve --nats URL started before its NATS answers
// /readyz with 503 "connecting to NATS ..." while it retries; once the
// server comes up it connects, gets ready, and a registered worker's
// events reach the index. On the old code Run returned at once with "no
// servers available for connection".
func TestServeWaitsForNATS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := eventplanetest.FreePort(t)
	cfg := DefaultServeConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.NATS.URL = fmt.Sprintf("nats://127.0.0.1:%d", port)
	cfg.Frontend.LoadPollInterval = -1
	cfg.Logger = eventplanetest.Quiet
	s, done := startServe(t, ctx, "serve", cfg)

	// The router is up (its HTTP answers) and retrying: wait for a
	// failed attempt to show on /readyz.
	waitUntil(t, 20*time.Second, "/readyz 503 naming a failed NATS attempt", func() (bool, string) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("serve returned before NATS came up: %v", err)
		default:
		}
		code, body := getBody(t, s.URL()+"/readyz")
		return code == 503 && strings.Contains(body, "connecting to NATS") && strings.Contains(body, "attempt"), fmt.Sprint(code, " ", body)
	})
	select {
	case <-s.Ready():
		t.Fatal("ready without NATS")
	default:
	}

	nats := eventplanetest.Server(t, port)
	select {
	case <-s.Ready():
	case err := <-done:
		done <- err
		t.Fatalf("serve stopped: %v", err)
	case <-time.After(30 * time.Second):
		_, body := getBody(t, s.URL()+"/readyz")
		t.Fatalf("not ready 30s after NATS came up: %s", body)
	}

	reg := discovery.NewRegistry(nats, discovery.RegistryConfig{Logger: eventplanetest.Quiet})
	if err := reg.Register(ctx, discovery.Worker{ID: 5, URL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	pub := eventplane.NewPublisher(nats, eventplane.PublisherConfig{Model: cfg.Frontend.Model, Logger: eventplanetest.Quiet})
	pctx, pcancel := context.WithCancel(ctx)
	pdone := make(chan struct{})
	go func() { defer close(pdone); _ = pub.Run(pctx) }()
	defer func() { pcancel(); <-pdone }()
	if err := pub.Publish(ctx, stored(5, 1, 4)); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "worker 5's events indexed", func() (bool, string) {
		for _, x := range s.Frontend().IndexSummaries().Workers {
			if x.Worker == 5 && x.Total == 4 {
				return true, ""
			}
		}
		return false, fmt.Sprint(s.Frontend().IndexSummaries().Workers)
	})
	// A registered worker up: /readyz answers 200 (before, "no workers
	// up", which is not about NATS).
	if code, body := getBody(t, s.URL()+"/readyz"); code != 200 {
		t.Fatalf("/readyz after NATS came up: %d %s", code, body)
	}
}
