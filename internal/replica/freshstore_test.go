package replica_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
)

// natsServer runs a NATS server as an external one would be: its own
// process state, reached over TCP on 127.0.0.1:port, store in dir.
func natsServer(t *testing.T, port int, dir string) *eventplane.Conn {
	t.Helper()
	cfg := eventplane.DefaultConfig()
	cfg.Port, cfg.StoreDir, cfg.Logger = port, dir, eventplanetest.Quiet
	c, err := eventplane.StartEmbedded(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func dial(t *testing.T, url string) *eventplane.Conn {
	t.Helper()
	cfg := eventplane.DefaultConfig()
	cfg.URL, cfg.Logger = url, eventplanetest.Quiet
	c, err := eventplane.Connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestFreshStoreRestart: the external NATS server restarts with an empty
// store (the stream is gone, sequences start over) while a router replica
// and a publisher stay up. The replica recreates the stream (publishers
// would otherwise wait on nothing forever), sees its new identity, clears
// its index and rebuilds from the new stream, taking each worker's first
// event id there as its baseline (the publisher kept numbering). Before:
// the replica resumed at its old sequence on a stream nobody recreated,
// blind until restarted.
func TestFreshStoreRestart(t *testing.T) {
	port := freePort(t)
	srv := natsServer(t, port, t.TempDir())
	url := srv.ClientURL()
	router, worker := dial(t, url), dial(t, url)
	cfg := fastConfig("r")
	cfg.SnapshotInterval = 0
	r := startNode(t, router, cfg)
	pub := startPublisher(t, worker)
	g := eventplanetest.NewGen(5, 3, 1)
	feed(t, pub, g, indexer.NewRadix(indexer.Config{}), 200)
	eventplanetest.WaitFor(t, 30*time.Second, "caught up", func() bool { return r.rep.Status().Applied > 0 && r.rep.Status().Ready })

	srv.Close()
	srv = natsServer(t, port, t.TempDir())
	t.Cleanup(srv.Close)
	// An external server starts with no stream (this test server's own
	// client created one at start).
	if err := srv.JS.DeleteStream(context.Background(), srv.Stream().Name); err != nil {
		t.Fatal(err)
	}

	// The same publisher goes on (its event ids continue); the reference
	// holds only what the new stream carries.
	fresh := indexer.NewRadix(indexer.Config{})
	feedCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for range 60 {
		ev := g.Next()
		_ = fresh.Apply(&ev)
		if err := pub.Publish(feedCtx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(feedCtx); err != nil {
		t.Fatal(err)
	}
	eventplanetest.WaitFor(t, 30*time.Second, "rebuilt from the new stream", func() bool {
		st := r.rep.Status()
		return st.Resets >= 1 && st.Ready && eventplanetest.DumpHash(r.idx.Dump()) == eventplanetest.DumpHash(fresh.Dump())
	})
}
