package replica_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
)

// TestSnapshotAheadOfStreamRead: a replica that reads the stream's last
// sequence before it fetches the newest snapshot can find the snapshot
// ahead of it (the writer saved a newer one meanwhile; or, in a cluster,
// the node that just took the stream over is not current yet). That is
// the same stream: the replica reads the stream again until it reaches
// the snapshot and restores it. Before, it took the snapshot for one of an
// earlier stream and replayed the whole stream (restored=0).
//
// The snapshot here covers model a's events up to the stream's last
// sequence plus 3, the messages after it being model b's (which the
// replica, following model a, never applies), so it is exactly what a
// writer would have saved once those were published.
func TestSnapshotAheadOfStreamRead(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	pubA := startModelPublisher(t, conn, "a")
	pubB := startModelPublisher(t, conn, "b")
	ref := indexer.NewRadix(indexer.RadixConfig{})
	g := eventplanetest.NewGen(21, 3, 1)
	feed(t, pubA, g, ref, 100)
	last := streamInfo(t, conn).State.LastSeq

	wcfg := fastConfig("w")
	wcfg.Model = "a"
	w := startNode(t, conn, wcfg)
	eventplanetest.WaitFor(t, 30*time.Second, "w's snapshot", func() bool { return latestSeq(t, w.rep) == last })
	w.stop()
	ctx := context.Background()
	s, err := w.rep.Snapshots().Latest(ctx)
	if err != nil || s.Stream == "" {
		t.Fatalf("snapshot %+v: %v", s, err)
	}
	s.Position.StreamSeq = last + 3
	if err := w.rep.Snapshots().Save(ctx, s); err != nil {
		t.Fatal(err)
	}

	cfg := fastConfig("r")
	cfg.Model, cfg.SnapshotInterval = "a", 0
	r := startNode(t, conn, cfg)
	eventplanetest.WaitFor(t, 30*time.Second, "r waiting for the stream to reach the snapshot", func() bool {
		return strings.Contains(r.rep.Status().Detail, "waiting for the stream to reach the snapshot's sequence")
	})
	if st := r.rep.Status(); st.Ready {
		t.Fatalf("r ready before the stream reached its snapshot: %s", st)
	}
	// One message per event (flushed one by one): model b's fill the
	// sequences the snapshot claims, then model a goes on.
	gb := eventplanetest.NewGen(22, 2, 1)
	for range 3 {
		feed(t, pubB, gb, indexer.NewRadix(indexer.RadixConfig{}), 1)
	}
	if got := streamInfo(t, conn).State.LastSeq; got != last+3 {
		t.Fatalf("stream at %d, want %d", got, last+3)
	}
	feed(t, pubA, g, ref, 40)
	final := streamInfo(t, conn).State.LastSeq
	eventplanetest.WaitFor(t, 30*time.Second, "r ready and caught up", func() bool {
		st := r.rep.Status()
		return st.Ready && st.Applied == final
	})
	if st := r.rep.Status(); st.Restored != last+3 || st.Resets != 0 {
		t.Fatalf("r did not restore the snapshot at %d: %s", last+3, st)
	}
	if err := r.idx.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := eventplanetest.DumpHash(r.idx.Dump()), eventplanetest.DumpHash(ref.Dump()); got != want {
		t.Fatalf("r's dump %x differs from model a's stream %x (%s)", got, want, r.rep.Status())
	}
}

func startModelPublisher(t *testing.T, conn *eventplane.Conn, model string) *eventplane.Publisher {
	t.Helper()
	p := eventplane.NewPublisher(conn, eventplane.PublisherConfig{Model: model, MaxBatch: 4, Logger: eventplanetest.Quiet})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}
