package discovery_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
)

// TestWatchSurvivesFreshStore: the NATS server restarts with an empty store
// (the registry bucket is gone). The workers' next heartbeat recreates the
// bucket, and the router's watch, which would stay silent on the bucket
// that no longer exists, notices the new bucket and restarts: a worker that
// registers after the restart joins within seconds, far below the 15 s
// registration TTL (before: never, until the router restarted).
func TestWatchSurvivesFreshStore(t *testing.T) {
	port := eventplanetest.FreePort(t)
	srv := eventplanetest.Server(t, port)
	url := srv.ClientURL()
	routerConn, workerConn := eventplanetest.Dial(t, url), eventplanetest.Dial(t, url)
	m := &members{joined: map[uint64]discovery.Worker{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- discovery.NewRegistry(routerConn, discovery.RegistryConfig{Logger: eventplanetest.Quiet}).Watch(ctx, m)
	}()
	defer func() { cancel(); <-watchDone }()
	workers := discovery.NewRegistry(workerConn, discovery.RegistryConfig{Logger: eventplanetest.Quiet})
	joined := func(id uint64) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, ok := m.joined[id]
		return ok
	}
	if err := workers.Register(ctx, discovery.Worker{ID: 1, URL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	eventplanetest.WaitFor(t, 10*time.Second, "worker 1 joined", func() bool { return joined(1) })

	srv.Close()
	srv = eventplanetest.Server(t, port)
	defer srv.Close()
	// A worker registering on the fresh server (retrying as a heartbeat
	// would, while its client reconnects) recreates the bucket.
	eventplanetest.WaitFor(t, 10*time.Second, "worker 2 registered", func() bool {
		return workers.Register(ctx, discovery.Worker{ID: 2, URL: "http://127.0.0.1:2"}) == nil
	})
	eventplanetest.WaitFor(t, 10*time.Second, "worker 2 joined after the fresh-store restart", func() bool { return joined(2) })
}
