package replica_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/replica"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/nats-io/nats.go/jetstream"
)

// node is one replica over a sticky-writer index (as serve runs it).
type node struct {
	idx    *indexer.Concurrent
	rep    *replica.Replica
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    error
}

func fastConfig(id string) replica.Config {
	c := replica.DefaultConfig()
	c.ID = id
	c.SnapshotInterval = 20 * time.Millisecond
	c.LeaseTTL, c.LeaseRenew = time.Second, 50*time.Millisecond
	c.StatusInterval = 20 * time.Millisecond
	c.Logger = eventplanetest.Quiet
	return c
}

func startNode(t *testing.T, conn *eventplane.Conn, cfg replica.Config) *node {
	t.Helper()
	n := &node{idx: indexer.NewConcurrent(indexer.NewFlash(indexer.FlashConfig{}), indexer.ConcurrentConfig{Writers: 2})}
	rep, err := replica.New(conn, cfg, replica.Options{
		Sink: n.idx, Dump: n.idx.Dump,
		Clear: func() {
			for _, id := range workerIDs(n.idx.Dump()) {
				n.idx.RemoveWorker(id)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n.rep = rep
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.wg.Add(2)
	go func() { defer n.wg.Done(); _ = n.idx.Run(ctx) }()
	go func() { defer n.wg.Done(); n.err = rep.Run(ctx) }()
	t.Cleanup(n.stop)
	return n
}

func (n *node) stop() {
	n.cancel()
	n.wg.Wait()
}

func workerIDs(evs []kvevents.Event) []uint64 {
	var ids []uint64
	for _, ev := range evs {
		ids = append(ids, ev.WorkerID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// feed publishes n generated events, applies them to ref too, and waits
// until the stream has them all.
func feed(t *testing.T, pub *eventplane.Publisher, g *eventplanetest.Gen, ref indexer.Index, n int) {
	t.Helper()
	ctx := context.Background()
	for range n {
		ev := g.Next()
		_ = ref.Apply(&ev)
		if err := pub.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func startPublisher(t *testing.T, conn *eventplane.Conn) *eventplane.Publisher {
	t.Helper()
	pub := eventplane.NewPublisher(conn, eventplane.PublisherConfig{MaxBatch: 4, Logger: eventplanetest.Quiet})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = pub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return pub
}

func streamInfo(t *testing.T, conn *eventplane.Conn) *jetstream.StreamInfo {
	t.Helper()
	st, err := conn.JS.Stream(context.Background(), conn.Stream().Name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func latestSeq(t *testing.T, rep *replica.Replica) uint64 {
	t.Helper()
	s, err := rep.Snapshots().Latest(context.Background())
	if errors.Is(err, context.DeadlineExceeded) {
		return 0 // a listing that got no reply: callers poll again
	}
	if err != nil {
		t.Fatal(err)
	}
	if s == nil {
		return 0
	}
	return s.Position.StreamSeq
}

// A replica starting after the stream's retention dropped its first
// messages restores the newest snapshot (which covers them), replays the
// rest, and is ready only once all of it is applied: its dump then
// equals an index that saw the whole stream. One without a snapshot
// replays what is left, says it lost events, and differs.
func TestCatchUpAfterRetention(t *testing.T) {
	conn := eventplanetest.EmbeddedWith(t, func(c *eventplane.Config) { c.Stream.MaxMsgs = 100000 })
	if got := streamInfo(t, conn).Config.MaxMsgs; got != 100000 {
		t.Fatalf("stream MaxMsgs %d", got)
	}
	pub := startPublisher(t, conn)
	ref := indexer.NewRadix(indexer.RadixConfig{})
	g := eventplanetest.NewGen(11, 4, 2)

	// w follows the whole stream from the start, writing nothing.
	wcfg := fastConfig("w")
	wcfg.SnapshotInterval = 0
	w := startNode(t, conn, wcfg)
	// a follows phase 1 and writes a snapshot covering all of it.
	a := startNode(t, conn, fastConfig("a"))
	feed(t, pub, g, ref, 400)
	last := streamInfo(t, conn).State.LastSeq
	eventplanetest.WaitFor(t, 30*time.Second, "a's snapshot covers phase 1", func() bool { return latestSeq(t, a.rep) == last })
	a.stop()

	// Phase 2, then retention shrinks to phase 2's messages: phase 1's
	// are gone from the stream but in the snapshot.
	feed(t, pub, g, ref, 200)
	info := streamInfo(t, conn)
	eventplanetest.WaitFor(t, 30*time.Second, "w read everything", func() bool { return w.rep.Status().Applied == info.State.LastSeq })
	cfg := info.Config
	cfg.MaxMsgs = int64(info.State.LastSeq - last)
	if _, err := conn.JS.UpdateStream(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	info = streamInfo(t, conn)
	if info.State.FirstSeq != last+1 {
		t.Fatalf("stream holds %d..%d, want it to start right after the snapshot's %d", info.State.FirstSeq, info.State.LastSeq, last)
	}

	bcfg := fastConfig("b")
	bcfg.SnapshotInterval = 0
	b := startNode(t, conn, bcfg)
	select {
	case <-b.rep.Ready():
	case <-time.After(30 * time.Second):
		t.Fatalf("b not ready: %s", b.rep.Status())
	}
	// Ready means applied: no flush before this dump.
	if got, want := eventplanetest.DumpHash(b.idx.Dump()), eventplanetest.DumpHash(ref.Dump()); got != want {
		t.Fatalf("b's dump %x differs from the whole stream's %x (%s)", got, want, b.rep.Status())
	}
	if err := w.idx.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := eventplanetest.DumpHash(b.idx.Dump()), eventplanetest.DumpHash(w.idx.Dump()); got != want {
		t.Fatalf("b's dump %x differs from w's %x, which saw the whole stream", got, want)
	}
	st := b.rep.Status()
	if !st.Ready || st.Restored != last || st.Applied != info.State.LastSeq || st.Lag != 0 || st.StreamFirst != last+1 {
		t.Fatalf("b status %+v", st)
	}

	// Without the snapshot (another bucket) the early events are lost.
	ccfg := fastConfig("c")
	ccfg.SnapshotInterval, ccfg.SnapshotBucket = 0, "other_snapshots"
	c := startNode(t, conn, ccfg)
	eventplanetest.WaitFor(t, 30*time.Second, "c ready", func() bool { return c.rep.Status().Ready })
	if st := c.rep.Status(); !strings.Contains(st.Detail, "dropped") || st.Restored != 0 {
		t.Errorf("c status %s", st)
	}
	t.Logf("b: %s", b.rep.Status())
	t.Logf("c: %s", c.rep.Status())
	if eventplanetest.DumpHash(c.idx.Dump()) == eventplanetest.DumpHash(ref.Dump()) {
		t.Error("c rebuilt the whole index without the dropped events")
	}
}

// Of two replicas only the lease holder writes snapshots; the store keeps
// the newest 3; when the holder stops, the other takes over the writing.
func TestSnapshotWriter(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	pub := startPublisher(t, conn)
	ref := indexer.NewRadix(indexer.RadixConfig{})
	g := eventplanetest.NewGen(5, 3, 1)
	x := startNode(t, conn, fastConfig("x"))
	y := startNode(t, conn, fastConfig("y"))
	var holder, other *node
	eventplanetest.WaitFor(t, 10*time.Second, "a holder", func() bool {
		switch {
		case x.rep.Status().LeaseHeld:
			holder, other = x, y
		case y.rep.Status().LeaseHeld:
			holder, other = y, x
		}
		return holder != nil
	})
	for round := range 5 {
		feed(t, pub, g, ref, 50)
		last := streamInfo(t, conn).State.LastSeq
		// The counter moves once Save (put, then prune) returned.
		eventplanetest.WaitFor(t, 30*time.Second, "snapshot of round", func() bool {
			return holder.rep.Status().Snapshots >= uint64(round+1) && latestSeq(t, holder.rep) == last
		})
	}
	if st := other.rep.Status(); st.Snapshots != 0 || st.LeaseHeld {
		t.Fatalf("the other replica wrote: %+v", st)
	}
	// Save prunes after it puts: wait for the newest 3.
	eventplanetest.WaitFor(t, 10*time.Second, "the newest 3 kept", func() bool { return len(snapshotNames(t, conn)) == 3 })

	holder.stop()
	eventplanetest.WaitFor(t, 10*time.Second, "the other takes the lease", func() bool { return other.rep.Status().LeaseHeld })
	feed(t, pub, g, ref, 50)
	last := streamInfo(t, conn).State.LastSeq
	eventplanetest.WaitFor(t, 30*time.Second, "the other's snapshot", func() bool {
		return other.rep.Status().Snapshots > 0 && latestSeq(t, other.rep) == last
	})
	eventplanetest.WaitFor(t, 10*time.Second, "the newest 3 kept", func() bool { return len(snapshotNames(t, conn)) == 3 })
	s, err := other.rep.Snapshots().Latest(context.Background())
	if err != nil || eventplanetest.DumpHash(s.Events) != eventplanetest.DumpHash(ref.Dump()) {
		t.Fatalf("newest snapshot differs from the stream (%v)", err)
	}
}

func snapshotNames(t *testing.T, conn *eventplane.Conn) []string {
	t.Helper()
	obs, err := conn.JS.ObjectStore(context.Background(), "kvrouter_snapshots")
	if err != nil {
		t.Fatal(err)
	}
	infos, err := obs.List(context.Background())
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		t.Fatal(err)
	}
	var names []string
	for _, in := range infos {
		if !in.Deleted {
			names = append(names, in.Name)
		}
	}
	return names
}

// A stream that restarts (deleted and recreated: sequences start over)
// makes the replica clear its index and rebuild it from the new stream.
func TestStreamRestart(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	pub := startPublisher(t, conn)
	old := indexer.NewRadix(indexer.RadixConfig{})
	r := startNode(t, conn, fastConfig("r"))
	feed(t, pub, eventplanetest.NewGen(3, 3, 1), old, 300)
	last := streamInfo(t, conn).State.LastSeq
	eventplanetest.WaitFor(t, 30*time.Second, "caught up", func() bool { return latestSeq(t, r.rep) == last })

	ctx := context.Background()
	if err := conn.JS.DeleteStream(ctx, conn.Stream().Name); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.EnsureStream(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := indexer.NewRadix(indexer.RadixConfig{})
	feed(t, pub, eventplanetest.NewGen(4, 2, 1), fresh, 60)
	newLast := streamInfo(t, conn).State.LastSeq
	if newLast >= last {
		t.Fatalf("new stream at %d, old at %d: the test needs fewer events", newLast, last)
	}
	eventplanetest.WaitFor(t, 30*time.Second, "rebuilt", func() bool {
		st := r.rep.Status()
		return st.Resets == 1 && st.Ready && st.Applied == newLast
	})
	if got, want := eventplanetest.DumpHash(r.idx.Dump()), eventplanetest.DumpHash(fresh.Dump()); got != want {
		t.Fatalf("after the restart the dump %x differs from the new stream's %x", got, want)
	}
}

// With a model filter the lag counts that model's messages only: another
// model's traffic after it leaves the replica caught up.
func TestModelFilterLag(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	pubs := map[string]*eventplane.Publisher{}
	for _, m := range []string{"a", "b"} {
		p := eventplane.NewPublisher(conn, eventplane.PublisherConfig{Model: m, MaxBatch: 4, Logger: eventplanetest.Quiet})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = p.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		pubs[m] = p
	}
	ref := indexer.NewRadix(indexer.RadixConfig{})
	feed(t, pubs["a"], eventplanetest.NewGen(1, 2, 1), ref, 40)
	aLast := streamInfo(t, conn).State.LastSeq
	feed(t, pubs["b"], eventplanetest.NewGen(2, 2, 1), indexer.NewRadix(indexer.RadixConfig{}), 40)
	if streamInfo(t, conn).State.LastSeq <= aLast {
		t.Fatal("b published nothing")
	}
	cfg := fastConfig("m")
	cfg.Model, cfg.SnapshotInterval = "a", 0
	n := startNode(t, conn, cfg)
	eventplanetest.WaitFor(t, 30*time.Second, "ready with no lag", func() bool {
		st := n.rep.Status()
		return st.Ready && st.StreamLast == aLast && st.Lag == 0
	})
	if got, want := eventplanetest.DumpHash(n.idx.Dump()), eventplanetest.DumpHash(ref.Dump()); got != want {
		t.Fatalf("model a's index %x, want %x", got, want)
	}
}
