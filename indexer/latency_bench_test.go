package indexer_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// BenchmarkLookupTail times every lookup of a 64-block prompt over 64
// workers (buildShared) on its own and reports the tail (p50-ns, p99-ns,
// p999-ns): writers=0 with the index quiet, writers=1 while one goroutine
// stores and evicts 64-block chains of other workers in the same index as
// fast as it can (lookups then contend with it for the lock and, on a
// machine with fewer free cores than goroutines, for the CPU).
//
//	go test ./indexer -run '^$' -bench LookupTail -benchtime 200000x
func BenchmarkLookupTail(b *testing.B) {
	const depth, workers = 64, 64
	for _, ix := range benchIndexes {
		for _, writers := range []int{0, 1} {
			b.Run(fmt.Sprintf("index=%s/blocks=%d/workers=%d/writers=%d", ix.name, depth, workers, writers), func(b *testing.B) {
				idx := ix.new()
				prompt := buildShared(b, idx, depth, workers)
				var stop atomic.Bool
				var wg sync.WaitGroup
				var writes atomic.Int64
				for range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(5, 5))
						store := kvevents.Event{Kind: kvevents.KindStored}
						remove := kvevents.Event{Kind: kvevents.KindRemoved}
						store.Blocks = make([]kvevents.Block, depth)
						remove.Hashes = make([]uint64, depth)
						for i := 0; !stop.Load(); i++ {
							w := uint64(1000 + i%workers) // other workers than the queried ones
							store.WorkerID, remove.WorkerID = w, w
							for j := range depth {
								h := uint64(1<<40 + j)
								store.Blocks[j] = kvevents.Block{Hash: h, Local: rng.Uint64()}
								remove.Hashes[depth-1-j] = h
							}
							if err := idx.Apply(&store); err != nil {
								panic(err)
							}
							if err := idx.Apply(&remove); err != nil {
								panic(err)
							}
							writes.Add(2 * depth)
						}
					}()
				}
				dst := idx.AppendMatches(nil, prompt)
				lat := make([]time.Duration, 0, min(b.N, 1<<22))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					t0 := time.Now()
					dst = idx.AppendMatches(dst[:0], prompt)
					if d := time.Since(t0); len(lat) < cap(lat) {
						lat = append(lat, d)
					}
				}
				b.StopTimer()
				stop.Store(true)
				wg.Wait()
				if len(dst) != workers {
					b.Fatalf("%d workers matched, want %d", len(dst), workers)
				}
				slices.Sort(lat)
				q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) }
				b.ReportMetric(q(0.50), "p50-ns")
				b.ReportMetric(q(0.99), "p99-ns")
				b.ReportMetric(q(0.999), "p999-ns")
				if writers > 0 {
					b.ReportMetric(float64(writes.Load())/b.Elapsed().Seconds(), "write-block-ops/s")
				}
			})
		}
	}
}
