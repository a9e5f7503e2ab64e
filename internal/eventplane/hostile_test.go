package eventplane_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	. "github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/kvevents"
)

// ingestCounts records OnIngest calls.
type ingestCounts struct {
	mu sync.Mutex
	m  map[string]uint64
}

func (c *ingestCounts) add(w uint64, reason string, n uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]uint64{}
	}
	c.m[fmt.Sprintf("%d:%s", w, reason)] += n
}

func (c *ingestCounts) get(k string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func storedOne(w, id, hash uint64) kvevents.Event {
	return kvevents.Event{WorkerID: w, EventID: id, Kind: kvevents.KindStored,
		Blocks: []kvevents.Block{{Hash: hash, Local: hash}}}
}

// TestHostileEventIDs: events published raw on the stream, as a buggy or
// hostile publisher would. An event naming another worker than its
// subject's is dropped and counted (it never reaches that worker's index);
// an id of 10^12 costs its worker one clear but the real ids that follow
// are applied, not swallowed as duplicates (before: the gap resync set the
// baseline to 10^12 and every later real event was dropped).
func TestHostileEventIDs(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	var counts ingestCounts
	idx := indexer.NewRadix(indexer.RadixConfig{})
	var mu sync.Mutex
	sink := sinkFunc(func(ev *kvevents.Event) error { mu.Lock(); defer mu.Unlock(); return idx.Apply(ev) })
	sub := NewSubscriber(conn, sink, SubscriberConfig{Model: "m", GapTimeout: 100 * time.Millisecond,
		Logger: eventplanetest.Quiet, Events: SubscriberEvents{OnIngest: counts.add}})
	run(t, sub.Run)
	ctx := context.Background()
	publish := func(subjectWorker uint64, evs ...kvevents.Event) {
		t.Helper()
		b, err := EncodeEnvelope(nil, FormatMsgpack, evs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.JS.Publish(ctx, conn.Subject("m", subjectWorker), b); err != nil {
			t.Fatal(err)
		}
	}
	publish(1, storedOne(1, 1, 11), storedOne(1, 2, 12), storedOne(1, 3, 13))
	publish(2, storedOne(2, 1, 21))
	publish(1, storedOne(2, 2, 666)) // worker 1's subject, worker 2's payload
	publish(1, storedOne(1, 1e12, 667))
	publish(1, storedOne(1, 4, 14), storedOne(1, 5, 15))
	eventplanetest.WaitFor(t, 10*time.Second, "applied", func() bool {
		return sub.Stats().Messages == 5 && sub.Stats().Order.Pending == 0
	})
	mu.Lock()
	got := eventplanetest.DumpHash(idx.Dump())
	mu.Unlock()
	// Worker 1 was cleared twice (the jump to 10^12, the drop back to 4)
	// and keeps events 4 and 5; worker 2 keeps only its own event.
	want := reference([]kvevents.Event{storedOne(1, 4, 14), storedOne(1, 5, 15), storedOne(2, 1, 21)})
	if got != want {
		mu.Lock()
		t.Fatalf("index %v, want worker 1: blocks 14, 15; worker 2: block 21", idx.Dump())
	}
	st := sub.Stats()
	if st.Mismatch != 1 || st.Order.Restarts != 2 {
		t.Fatalf("stats %+v", st)
	}
	if counts.get("1:worker_mismatch") != 1 || counts.get("1:restart") != 2 {
		t.Fatalf("ingest counts %v", counts.m)
	}
}

type sinkFunc func(ev *kvevents.Event) error

func (f sinkFunc) Apply(ev *kvevents.Event) error { return f(ev) }
