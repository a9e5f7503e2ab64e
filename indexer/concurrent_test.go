package indexer_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/indexer/indexertest"
	"github.com/kvrouter/kvrouter/kvevents"
)

// workerEvents returns a random but valid-looking event stream for one
// worker+rank: chains stored under earlier blocks, removals, a few
// rejections and clears.
func workerEvents(rng *rand.Rand, w kvevents.Worker, n int) []kvevents.Event {
	var held []uint64
	var evs []kvevents.Event
	next := w.ID<<40 | uint64(w.Rank)<<32
	for i := range n {
		ev := kvevents.Event{WorkerID: w.ID, DPRank: w.Rank, EventID: uint64(i + 1)}
		switch x := rng.IntN(20); {
		case x < 13:
			ev.Kind = kvevents.KindStored
			if len(held) > 0 && rng.IntN(3) > 0 {
				ev.HasParent, ev.Parent = true, held[rng.IntN(len(held))]
			}
			if rng.IntN(30) == 0 {
				ev.HasParent, ev.Parent = true, 1 // unknown: rejected
			}
			for range 1 + rng.IntN(8) {
				next++
				ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: next, Local: 1 + rng.Uint64N(4)})
				held = append(held, next)
			}
		case x < 19 && len(held) > 0:
			ev.Kind = kvevents.KindRemoved
			ev.Hashes = []uint64{held[rng.IntN(len(held))]}
		default:
			ev.Kind = kvevents.KindCleared
			held = held[:0]
		}
		evs = append(evs, ev)
	}
	return evs
}

func TestConcurrentMatchesSequential(t *testing.T) {
	t.Run("flash", func(t *testing.T) {
		testConcurrentMatchesSequential(t, func() indexer.Index { return indexer.NewFlash(indexer.FlashConfig{Stride: 4}) })
	})
	// One shard per writer: each writer owns a shard.
	t.Run("sharded", func(t *testing.T) {
		testConcurrentMatchesSequential(t, func() indexer.Index {
			return exactNodes{indexer.NewSharded(3, func() indexer.Index { return indexer.NewFlash(indexer.FlashConfig{Stride: 4}) })}
		})
	})
}

func testConcurrentMatchesSequential(t *testing.T, newIndex func() indexer.Index) {
	rng := rand.New(rand.NewPCG(1, 2))
	var streams [][]kvevents.Event
	for id := range uint64(6) {
		for rank := range uint32(2) {
			streams = append(streams, workerEvents(rng, kvevents.Worker{ID: id + 1, Rank: rank}, 200))
		}
	}
	seq := indexer.NewFlash(indexer.FlashConfig{Stride: 4})
	seqRejected := 0
	for _, s := range streams {
		for i := range s {
			if seq.Apply(&s[i]) != nil {
				seqRejected++
			}
		}
	}

	var rejected, applied atomic.Int64
	c := indexer.NewConcurrent(newIndex(), indexer.ConcurrentConfig{
		Writers: 3, QueueSize: 8,
		Events: indexer.Events{
			OnApplied: func(*kvevents.Event) { applied.Add(1) },
			OnRejected: func(_ *kvevents.Event, err error) {
				if !errors.Is(err, indexer.ErrUnknownParent) {
					t.Errorf("unexpected rejection: %v", err)
				}
				rejected.Add(1)
			},
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()

	// Producers: one per stream (per-worker order preserved); readers
	// query concurrently.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rr := rand.New(rand.NewPCG(uint64(r), 9))
			var dst indexer.Overlaps
			for {
				select {
				case <-stop:
					return
				default:
				}
				q := []uint64{1 + rr.Uint64N(4), 1 + rr.Uint64N(4), 1 + rr.Uint64N(4)}
				dst = c.AppendMatches(dst[:0], q)
				for _, o := range dst {
					if o.Blocks < 1 || o.Blocks > len(q) {
						t.Errorf("overlap %v out of range", o)
					}
				}
			}
		}()
	}
	var prod sync.WaitGroup
	for _, s := range streams {
		prod.Add(1)
		go func() {
			defer prod.Done()
			for i := range s {
				if err := c.Apply(&s[i]); err != nil {
					t.Errorf("apply: %v", err)
				}
			}
		}()
	}
	prod.Wait()
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()

	if got := c.Stats(); got.Queued != 0 {
		t.Errorf("queued %d after flush", got.Queued)
	}
	if a, b := indexertest.FormatStats(seq.Stats()), indexertest.FormatStats(c.Stats()); a != b {
		t.Errorf("stats: sequential %s, concurrent %s", a, b)
	}
	if int(rejected.Load()) != seqRejected || int(rejected.Load()+applied.Load()) != 12*200 {
		t.Errorf("callbacks: %d rejected (want %d), %d applied", rejected.Load(), seqRejected, applied.Load())
	}
	if a, b := indexertest.FormatEvents(seq.Dump()), indexertest.FormatEvents(c.Dump()); a != b {
		t.Errorf("dumps differ")
	}

	// RemoveWorker is ordered after everything enqueued before it.
	c.RemoveWorker(1)
	seq.RemoveWorker(1)
	if a, b := indexertest.FormatEvents(seq.Dump()), indexertest.FormatEvents(c.Dump()); a != b {
		t.Errorf("dumps differ after RemoveWorker")
	}

	cancel()
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
	ev := kvevents.Event{WorkerID: 1, Kind: kvevents.KindCleared}
	if err := c.Apply(&ev); !errors.Is(err, indexer.ErrClosed) {
		t.Errorf("apply after Run: %v", err)
	}
	if err := c.Flush(context.Background()); !errors.Is(err, indexer.ErrClosed) {
		t.Errorf("flush after Run: %v", err)
	}
}
