package indexer_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
)

// churnEvents returns, per worker of buildShared(64, workers), a Stored
// event of a chain-block branch under the shared block 33 and the Removed
// event that evicts it leaf-first; applying them alternately, forever, is
// valid. The events are never modified (Concurrent shares their slices).
func churnEvents(workers, chain int) (stores, removes []kvevents.Event) {
	rng := rand.New(rand.NewPCG(11, 11))
	for w := range workers {
		st := kvevents.Event{WorkerID: uint64(w), Kind: kvevents.KindStored, HasParent: true, Parent: 33}
		rm := kvevents.Event{WorkerID: uint64(w), Kind: kvevents.KindRemoved}
		for j := range chain {
			h := uint64(1<<40 + j)
			st.Blocks = append(st.Blocks, kvevents.Block{Hash: h, Local: rng.Uint64()})
		}
		for j := chain - 1; j >= 0; j-- {
			rm.Hashes = append(rm.Hashes, st.Blocks[j].Hash)
		}
		stores, removes = append(stores, st), append(removes, rm)
	}
	return stores, removes
}

func runConcurrent(b *testing.B, c *indexer.Concurrent) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return func() {
		cancel()
		<-done
	}
}

// BenchmarkConcurrent: the event plane's shape. mode=write pushes b.N
// events (store/remove of a 16-block chain, 64 workers) through
// Concurrent.Apply from one producer and waits for them (Flush); ns/op is
// per event. mode=mixed runs readers (b.RunParallel, one per P) doing
// 64-block lookups over 64 workers inline while one producer streams
// events as fast as the writers take them; ns/op is per lookup, and
// events/s, block-ops/s (query blocks + event blocks) are reported.
//
//	go test ./indexer -run '^$' -bench Concurrent -benchtime 20000x -cpu 1,2
func BenchmarkConcurrent(b *testing.B) {
	const workers, chain = 64, 16
	for _, ix := range benchIndexes {
		b.Run("index="+ix.name+"/mode=write", func(b *testing.B) {
			idx := ix.new()
			buildShared(b, idx, 64, workers)
			stores, removes := churnEvents(workers, chain)
			c := indexer.NewConcurrent(idx, indexer.ConcurrentConfig{})
			stop := runConcurrent(b, c)
			defer stop()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				w := (i / 2) % workers
				ev := &stores[w]
				if i%2 == 1 {
					ev = &removes[w]
				}
				if err := c.Apply(ev); err != nil {
					b.Fatal(err)
				}
			}
			if err := c.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if s := c.Stats(); s.Rejected != 0 || s.UnknownRemove != 0 {
				b.Fatalf("bad stream: %+v", s)
			}
			b.ReportMetric(float64(chain)*float64(b.N)/b.Elapsed().Seconds(), "block-ops/s")
		})
		b.Run("index="+ix.name+"/mode=mixed", func(b *testing.B) {
			idx := ix.new()
			prompt := buildShared(b, idx, 64, workers)
			stores, removes := churnEvents(workers, chain)
			c := indexer.NewConcurrent(idx, indexer.ConcurrentConfig{})
			stop := runConcurrent(b, c)
			defer stop()
			// Goroutine g of G = GOMAXPROCS produces the events of
			// workers w ≡ g (mod G), so per-worker order holds.
			G := runtime.GOMAXPROCS(0)
			var ids atomic.Int64
			var hist latencyHist
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				g := int(ids.Add(1) - 1)
				var mine []int
				for w := g; w < workers; w += G {
					mine = append(mine, w)
				}
				var dst indexer.Overlaps
				var h latencyHist
				defer hist.merge(&h)
				for i := 0; pb.Next(); i++ {
					t0 := time.Now()
					dst = c.AppendMatches(dst[:0], prompt)
					h.add(time.Since(t0))
					if len(dst) != workers {
						b.Errorf("%d overlaps", len(dst))
						return
					}
					if len(mine) == 0 {
						continue
					}
					w := mine[(i/2)%len(mine)]
					ev := &stores[w]
					if i%2 == 1 {
						ev = &removes[w]
					}
					if err := c.Apply(ev); err != nil {
						b.Error(err)
						return
					}
				}
			})
			if err := c.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N)/sec, "lookups/s")
			b.ReportMetric(hist.quantile(0.5), "lookup-p50-ns")
			b.ReportMetric(hist.quantile(0.99), "lookup-p99-ns")
			b.ReportMetric(float64(b.N)/sec, "events/s")
			b.ReportMetric(float64(b.N)*float64(chain+len(prompt))/sec, "block-ops/s")
		})
	}
}

// latencyHist is a fixed histogram of lookup latencies: 25 ns buckets up
// to 100 µs, the last bucket catching the rest. Timing adds ~2 clock reads
// per lookup to mode=mixed's ns/op.
type latencyHist struct {
	mu sync.Mutex
	n  [4001]uint64
}

func (h *latencyHist) add(d time.Duration) { h.n[min(int(d/25), len(h.n)-1)]++ }

func (h *latencyHist) merge(o *latencyHist) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, v := range o.n {
		h.n[i] += v
	}
}

// quantile returns the upper bound in ns of the bucket holding quantile q.
func (h *latencyHist) quantile(q float64) float64 {
	var total uint64
	for _, v := range h.n {
		total += v
	}
	want := uint64(q * float64(total))
	var acc uint64
	for i, v := range h.n {
		if acc += v; acc > want {
			return float64((i + 1) * 25)
		}
	}
	return float64(len(h.n) * 25)
}
