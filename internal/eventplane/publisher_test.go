package eventplane_test

import (
	"context"
	"testing"
	"time"

	. "github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/kvevents"
)

// With a linger far longer than the test, batching must still be bounded by
// everything but time: an idle pipeline sends at once, a full batch is
// sent at once, a Flush sends what lingers, and a small intake queue never
// blocks Publish for the linger.
func TestPublisherLingerBounds(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	const maxBatch = 8
	pub := NewPublisher(conn, PublisherConfig{Linger: time.Hour, MaxBatch: maxBatch, Queue: 16,
		Logger: eventplanetest.Quiet})
	run(t, pub.Run)
	idx := index(t)
	sub := NewSubscriber(conn, idx, SubscriberConfig{Logger: eventplanetest.Quiet})
	run(t, sub.Run)
	ctx := context.Background()
	g := eventplanetest.NewGen(7, 5, 1)
	var evs []kvevents.Event
	publish := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			ev := g.Next()
			evs = append(evs, ev)
			if err := pub.Publish(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Idle pipeline: the first event is sent without waiting for Linger.
	publish(1)
	eventplanetest.WaitFor(t, 30*time.Second, "first event sent at once", func() bool { return sub.Stats().Events == 1 })

	// Size bound: at most one partial batch (< MaxBatch events) per worker
	// may linger; everything else is sent without a Flush. 5 workers.
	publish(400)
	least := uint64(len(evs) - 5*(maxBatch-1))
	eventplanetest.WaitFor(t, 30*time.Second, "full batches sent without Flush", func() bool {
		return sub.Stats().Events >= least
	})

	// Flush wakes the lingering publisher and sends the rest.
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := pub.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	if st := pub.Stats(); st.Events != uint64(len(evs)) || st.Messages >= uint64(len(evs)) {
		t.Fatalf("publisher stats %+v after %d events: want all acknowledged, batched", st, len(evs))
	}
	eventplanetest.WaitFor(t, 30*time.Second, "all events applied", func() bool { return sub.Stats().Events == uint64(len(evs)) })
	if err := idx.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	if st := sub.Stats().Order; st.Gaps != 0 || st.Duplicates != 0 || st.Resyncs != 0 {
		t.Fatalf("order stats %+v", st)
	}
	if got, want := eventplanetest.DumpHash(idx.Index().Dump()), reference(evs); got != want {
		t.Fatalf("dump hash %x, want %x", got, want)
	}
}
