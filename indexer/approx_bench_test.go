package indexer

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/cputime"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// BenchmarkApproxInsert is the predicted side index's cost per booked
// block (the router's InsertSeq of every routed prompt), in three shapes
// of 512-block prompts, the clock advancing 20 µs per Insert:
//   - same: one prompt booked on one worker again and again (each Insert
//     refreshes every pair of the previous one, as BenchmarkRouteOverhead);
//   - rotate: one prompt booked on 64 workers in turn (every block has 64
//     members; each Insert refreshes pairs set 64 Inserts earlier);
//   - shared: prompts sharing a 448-block system prompt, each with its own
//     64-block tail, booked on 64 workers in turn (the refreshed pairs'
//     older Inserts keep their tails).
//
// The TTL (2 s) exceeds the run for the first b.N <= 100000, so nothing
// expires: the figure is the refresh and insert work itself.
func BenchmarkApproxInsert(b *testing.B) {
	const n, workers = 512, 64
	prompts := func(k, shared int) [][]uint64 {
		ps := make([][]uint64, k)
		for p := range ps {
			locals := make([]uint64, n)
			for i := range locals {
				locals[i] = uint64(i + 1)
				if i >= shared {
					locals[i] += uint64(p+1) << 32
				}
			}
			ps[p] = kvhash.SeqHashes(locals)
		}
		return ps
	}
	for _, tc := range []struct {
		name    string
		workers int
		prompts [][]uint64
	}{
		{"same", 1, prompts(1, n)},
		{"rotate", workers, prompts(1, n)},
		{"shared", workers, prompts(256, n-64)},
	} {
		b.Run(fmt.Sprintf("shape=%s", tc.name), func(b *testing.B) {
			a := NewApprox(ApproxConfig{TTL: 2 * time.Second})
			now := time.Unix(0, 0)
			insert := func(i int) {
				now = now.Add(20 * time.Microsecond)
				w := kvevents.Worker{ID: uint64(1 + i%tc.workers)}
				a.InsertSeq(w, tc.prompts[i%len(tc.prompts)], now)
			}
			// Warm up: every worker holds its prompts once.
			for i := range tc.workers * len(tc.prompts) {
				insert(i)
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			b.ResetTimer()
			c0, cok := cputime.Thread()
			for i := range b.N {
				insert(i)
			}
			c1, _ := cputime.Thread()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/block")
			if cok {
				// Thread CPU time: what a loaded machine moves least.
				b.ReportMetric(float64((c1-c0).Nanoseconds())/float64(b.N*n), "cpu-ns/block")
			}
		})
	}
}
