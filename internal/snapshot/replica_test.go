package snapshot_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/snapshot"
	"github.com/kvrouter/kvrouter/kvevents"
)

// replica is one router replica's event plane: index, subscriber,
// snapshot manager.
type replica struct {
	idx    *indexer.Concurrent
	sub    *eventplane.Subscriber
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startReplica(t *testing.T, conn *eventplane.Conn, m *snapshot.Manager, snapshots bool) *replica {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{cancel: cancel}
	r.idx = indexer.NewConcurrent(indexer.NewFlash(indexer.FlashConfig{}), indexer.ConcurrentConfig{Writers: 2})
	r.wg.Add(1)
	go func() { defer r.wg.Done(); _ = r.idx.Run(ctx) }()
	pos, err := m.Restore(ctx, r.idx)
	if err != nil {
		t.Fatal(err)
	}
	r.sub = eventplane.NewSubscriber(conn, r.idx, eventplane.SubscriberConfig{Start: pos, Logger: eventplanetest.Quiet})
	r.wg.Add(1)
	go func() { defer r.wg.Done(); _ = r.sub.Run(ctx) }()
	if snapshots {
		r.wg.Add(1)
		go func() { defer r.wg.Done(); _ = m.Run(ctx, r.sub, r.idx.Index()) }()
	}
	select {
	case <-r.sub.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("replica not ready")
	}
	return r
}

func (r *replica) stop() { r.cancel(); r.wg.Wait() }

func (r *replica) hash(t *testing.T) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var h uint64
	if err := r.sub.Checkpoint(ctx, func(eventplane.Position) error {
		h = eventplanetest.DumpHash(r.idx.Index().Dump())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return h
}

// Two replicas, a random event stream, one replica killed and restarted
// (from snapshot + stream) several times: both end with identical dumps,
// equal to an index fed directly.
func TestReplicasConverge(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	m := snapshot.NewManager(conn, snapshot.Config{Every: 200, Interval: 50 * time.Millisecond, Keep: 2, Logger: eventplanetest.Quiet})
	pub := eventplane.NewPublisher(conn, eventplane.PublisherConfig{MaxBatch: 8, Logger: eventplanetest.Quiet})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = pub.Run(ctx) }()
	defer wg.Wait()
	defer cancel()

	a := startReplica(t, conn, m, true)
	defer a.stop()
	b := startReplica(t, conn, m, false)
	ref := indexer.NewRadix(indexer.RadixConfig{})
	g := eventplanetest.NewGen(7, 5, 2)
	const rounds, perRound = 4, 800
	for round := 0; round < rounds; round++ {
		for i := 0; i < perRound; i++ {
			ev := g.Next()
			_ = ref.Apply(&ev)
			if err := pub.Publish(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := pub.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if round == rounds-1 {
			// Snapshots are taken on a 50ms tick: wait for one, so at
			// least the last restart is from a snapshot (the rounds can
			// all run inside one tick).
			eventplanetest.WaitFor(t, 30*time.Second, "a snapshot taken", func() bool { return lastSeq(t, m) > 0 })
		}
		// Kill b mid-stream and bring it back from the newest snapshot.
		b.stop()
		snapBefore := lastSeq(t, m)
		b = startReplica(t, conn, m, false)
		t.Logf("round %d: b restarted from snapshot seq %d", round, snapBefore)
	}
	defer b.stop()
	want := eventplanetest.DumpHash(ref.Dump())
	total := uint64(rounds * perRound)
	eventplanetest.WaitFor(t, 30*time.Second, "replica a applied all", func() bool { return a.sub.Stats().Events >= total })
	seq := a.sub.Stats().StreamSeq
	eventplanetest.WaitFor(t, 30*time.Second, "replica b caught up", func() bool { return b.sub.Stats().StreamSeq >= seq })
	ha, hb := a.hash(t), b.hash(t)
	if ha != want || hb != want {
		t.Fatalf("dump hashes a=%x b=%x, want %x", ha, hb, want)
	}
	if lastSeq(t, m) == 0 {
		t.Fatal("no snapshot was ever taken")
	}
	for _, r := range []*replica{a, b} {
		if st := r.sub.Stats(); st.Order.Resyncs != 0 {
			t.Fatalf("resyncs: %+v", st)
		}
	}
	if ref.Stats().Blocks == 0 {
		t.Fatal("empty reference")
	}
}

func lastSeq(t *testing.T, m *snapshot.Manager) uint64 {
	s, err := m.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s == nil {
		return 0
	}
	return s.Position.StreamSeq
}

func TestEncodeDecode(t *testing.T) {
	g := eventplanetest.NewGen(1, 2, 2)
	s := &snapshot.Snapshot{Position: eventplane.Position{StreamSeq: 42,
		LastIDs: map[kvevents.Worker]uint64{{ID: 1}: 3, {ID: 2, Rank: 1}: 9}}, Created: time.Unix(5, 0).UTC(), Stream: "s1"}
	for i := 0; i < 20; i++ {
		if ev := g.Next(); ev.Kind == kvevents.KindStored {
			ev.EventID = 0
			s.Events = append(s.Events, ev)
		}
	}
	b, err := snapshot.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := snapshot.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Position.StreamSeq != 42 || len(got.Position.LastIDs) != 2 || got.Position.LastIDs[kvevents.Worker{ID: 2, Rank: 1}] != 9 ||
		eventplanetest.DumpHash(got.Events) != eventplanetest.DumpHash(s.Events) || !got.Created.Equal(s.Created) || got.Stream != "s1" {
		t.Fatalf("round trip differs: %+v", got.Position)
	}
	if _, err := snapshot.Decode([]byte("nonsense")); err == nil {
		t.Fatal("decoded nonsense")
	}
}
