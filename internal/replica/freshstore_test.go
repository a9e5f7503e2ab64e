package replica_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
)

// TestFreshStoreRestart: the external NATS server restarts with an empty
// store (the stream is gone, sequences start over) while a router replica
// and a publisher stay up. The replica recreates the stream (publishers
// would otherwise wait on nothing forever), sees its new identity, clears
// its index and rebuilds from the new stream, taking each worker's first
// event id there as its baseline (the publisher kept numbering). Before:
// the replica resumed at its old sequence on a stream nobody recreated,
// blind until restarted.
func TestFreshStoreRestart(t *testing.T) {
	port := eventplanetest.FreePort(t)
	srv := eventplanetest.Server(t, port)
	url := srv.ClientURL()
	router, worker := eventplanetest.Dial(t, url), eventplanetest.Dial(t, url)
	cfg := fastConfig("r")
	cfg.SnapshotInterval = 0
	r := startNode(t, router, cfg)
	pub := startPublisher(t, worker)
	g := eventplanetest.NewGen(5, 3, 1)
	feed(t, pub, g, indexer.NewRadix(indexer.RadixConfig{}), 200)
	eventplanetest.WaitFor(t, 30*time.Second, "caught up", func() bool { return r.rep.Status().Applied > 0 && r.rep.Status().Ready })

	srv.Close()
	srv = eventplanetest.Server(t, port)
	t.Cleanup(srv.Close)
	// An external server starts with no stream (this test server's own
	// client created one at start).
	if err := srv.JS.DeleteStream(context.Background(), srv.Stream().Name); err != nil {
		t.Fatal(err)
	}

	// The same publisher goes on (its event ids continue); the reference
	// holds only what the new stream carries.
	fresh := indexer.NewRadix(indexer.RadixConfig{})
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
