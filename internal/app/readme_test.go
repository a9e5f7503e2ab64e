package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
)

// TestServeEmbeddedNATSAndReadyz: serve with neither a NATS URL nor static
// workers starts an embedded NATS server on loopback (default port 4222,
// here a free one) for workers to register in; GET /readyz answers 503
// until a worker is known and 200 after one registered; a worker of
// another block size is refused (Members().Refused) and not routed to.
func TestServeEmbeddedNATSAndReadyz(t *testing.T) {
	if p := DefaultServeConfig().NATS.Port; p != 4222 {
		t.Errorf("default embedded NATS port %d, want 4222", p)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := DefaultServeConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.NATS.Port = 0 // a free port; 4222 may be taken on a shared machine
	cfg.Frontend.LoadPollInterval = -1
	cfg.Logger = quiet
	s, err := NewServe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	select {
	case <-s.Ready():
	case err := <-done:
		done <- err
		t.Fatalf("serve stopped before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve not ready after 30s")
	}
	if u := s.NATSURL(); !strings.HasPrefix(u, "nats://127.0.0.1:") {
		t.Fatalf("embedded NATS at %q, want a loopback server", u)
	}
	readyz := func() int {
		resp, err := http.Get(s.URL() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if st := readyz(); st != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with no worker: %d, want 503", st)
	}
	reg := discovery.NewRegistry(s.Conn(), discovery.RegistryConfig{Logger: quiet})
	if err := reg.Register(ctx, discovery.Worker{ID: 2, URL: "http://127.0.0.1:2", BlockSize: 16}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(ctx, discovery.Worker{ID: 1, URL: "http://127.0.0.1:1", BlockSize: 64}); err != nil {
		t.Fatal(err)
	}
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for readyz() != http.StatusOK || s.Members().Refused() != 1 {
		select {
		case <-deadline.C:
			t.Fatalf("/readyz %d, refused %d: want 200 and 1 after registrations", readyz(), s.Members().Refused())
		case <-tick.C:
		}
	}
	if st := s.Frontend().Router().Stats(); st.Workers != 1 {
		t.Errorf("router has %d workers, want 1 (block size 16 refused)", st.Workers)
	}
}
