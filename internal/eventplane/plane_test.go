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

// index is a sticky-writer index running until the test ends.
func index(t *testing.T) *indexer.Concurrent {
	t.Helper()
	c := indexer.NewConcurrent(indexer.NewRadix(indexer.RadixConfig{}), indexer.ConcurrentConfig{Writers: 2})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return c
}

func run(t *testing.T, fn func(ctx context.Context) error) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() { cancel(); wg.Wait() }
}

func reference(evs []kvevents.Event) uint64 {
	r := indexer.NewRadix(indexer.RadixConfig{})
	for i := range evs {
		_ = r.Apply(&evs[i])
	}
	return eventplanetest.DumpHash(r.Dump())
}

// A restart of the embedded NATS server in the middle of publishing loses
// no event: the index equals one fed directly. Both client transports
// (in-process, the default, and loopback TCP) reconnect to the restarted
// server; each format runs on one of them.
func TestEmbeddedRestartLosesNothing(t *testing.T) {
	for _, tc := range []struct {
		f   Format
		tcp bool
	}{{FormatMsgpack, false}, {FormatJSON, true}} {
		f := tc.f
		t.Run(fmt.Sprintf("%s/tcp=%v", f, tc.tcp), func(t *testing.T) {
			conn := eventplanetest.EmbeddedWith(t, func(c *Config) { c.LoopbackTCP = tc.tcp })
			model := "m-" + f.String()
			pub := NewPublisher(conn, PublisherConfig{Model: model, Format: f, MaxBatch: 16, Logger: eventplanetest.Quiet})
			run(t, pub.Run)
			idx := index(t)
			sub := NewSubscriber(conn, idx, SubscriberConfig{Model: model, Logger: eventplanetest.Quiet})
			run(t, sub.Run)

			g := eventplanetest.NewGen(42, 4, 2)
			const n = 3000
			evs := make([]kvevents.Event, n)
			ctx := context.Background()
			for i := range evs {
				evs[i] = g.Next()
				if err := pub.Publish(ctx, evs[i]); err != nil {
					t.Fatal(err)
				}
				if i == n/2 {
					if err := conn.Restart(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := pub.Flush(fctx); err != nil {
				t.Fatal(err)
			}
			if got := pub.Stats().Events; got < n {
				t.Fatalf("publisher acknowledged %d of %d", got, n)
			}
			eventplanetest.WaitFor(t, 30*time.Second, "all events applied", func() bool {
				return sub.Stats().Events >= n
			})
			if err := idx.Flush(fctx); err != nil {
				t.Fatal(err)
			}
			st := sub.Stats()
			if st.Order.Resyncs != 0 || st.BadPayload != 0 || st.Events != n {
				t.Fatalf("stats %+v", st)
			}
			if got, want := eventplanetest.DumpHash(idx.Index().Dump()), reference(evs); got != want {
				t.Fatalf("index dump hash %x, want %x", got, want)
			}
			if idx.Index().Stats().Blocks == 0 {
				t.Fatal("empty index")
			}
		})
	}
}

// Subscriber starting late replays the stream and reports ready.
func TestSubscriberReady(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	pub := NewPublisher(conn, PublisherConfig{AssignIDs: true, Logger: eventplanetest.Quiet})
	run(t, pub.Run)
	ctx := context.Background()
	g := eventplanetest.NewGen(3, 2, 1)
	var evs []kvevents.Event
	for i := 0; i < 500; i++ {
		ev := g.Next()
		evs = append(evs, ev)
		ev.EventID = 0 // the publisher numbers them
		if err := pub.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	idx := index(t)
	sub := NewSubscriber(conn, idx, SubscriberConfig{Logger: eventplanetest.Quiet})
	run(t, sub.Run)
	select {
	case <-sub.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("not ready")
	}
	if got := sub.Stats().Events; got != 500 {
		t.Fatalf("ready after %d events, want 500", got)
	}
	_ = idx.Flush(ctx)
	if got, want := eventplanetest.DumpHash(idx.Index().Dump()), reference(evs); got != want {
		t.Fatalf("dump hash %x, want %x", got, want)
	}
	// A second publisher resuming the numbering continues the ids.
	p2 := NewPublisher(conn, PublisherConfig{AssignIDs: true, Logger: eventplanetest.Quiet})
	if err := p2.Resume(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	run(t, p2.Run)
	ev := g.Next()
	want := ev.EventID
	ev.EventID = 0
	if err := p2.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	_ = p2.Flush(ctx)
	eventplanetest.WaitFor(t, 10*time.Second, "resumed event", func() bool { return sub.Stats().Events == 501 })
	if st := sub.Stats().Order; st.Gaps != 0 || st.Duplicates != 0 {
		t.Fatalf("resumed ids not continuous (want id %d): %+v", want, st)
	}
}

// OnMessage reports every stream message with its JetStream store time,
// and the events it made visible add up to what was published.
func TestSubscriberOnMessage(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	pub := NewPublisher(conn, PublisherConfig{MaxBatch: 8, Logger: eventplanetest.Quiet})
	run(t, pub.Run)
	var mu sync.Mutex
	var msgs, applied int
	var zero bool
	cfg := SubscriberConfig{Logger: eventplanetest.Quiet}
	cfg.Events.OnMessage = func(stored time.Time, n int) {
		mu.Lock()
		defer mu.Unlock()
		msgs++
		applied += n
		zero = zero || stored.IsZero()
	}
	sub := NewSubscriber(conn, index(t), cfg)
	run(t, sub.Run)
	ctx := context.Background()
	g := eventplanetest.NewGen(9, 3, 1)
	const n = 200
	for range n {
		if err := pub.Publish(ctx, g.Next()); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// OnMessage runs after the events are counted: wait on its own count.
	eventplanetest.WaitFor(t, 30*time.Second, "all events reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return applied >= n
	})
	mu.Lock()
	defer mu.Unlock()
	if st := sub.Stats(); uint64(msgs) != st.Messages || applied != n || zero {
		t.Fatalf("OnMessage: %d messages (stats %d), %d events applied (want %d), zero timestamp %v",
			msgs, st.Messages, applied, n, zero)
	}
}
