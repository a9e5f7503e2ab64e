package indexer_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
)

// buildStaggered fills idx with copies prompts of blocks blocks each (own
// hashes), held by workers whose depths are spread over the prompt: worker
// i holds the first 1 + i*37 mod blocks blocks of every copy, so a lookup
// loses a worker at up to workers distinct positions (the shape of a fleet
// whose caches hold prefixes of one long conversation, and of the router's
// BenchmarkRouteOverhead). It returns the copies' local hashes.
func buildStaggered(tb testing.TB, idx indexer.Index, blocks, workers, copies int) [][]uint64 {
	rng := rand.New(rand.NewPCG(uint64(blocks), uint64(copies)))
	prompts := make([][]uint64, copies)
	for c := range prompts {
		prompts[c] = make([]uint64, blocks)
		for i := range prompts[c] {
			prompts[c][i] = rng.Uint64()
		}
	}
	for w := range workers {
		n := 1 + w*37%blocks
		ev := kvevents.Event{WorkerID: uint64(w), Kind: kvevents.KindStored}
		for c, p := range prompts {
			ev.Blocks = ev.Blocks[:0]
			for i := range n {
				ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: uint64(c)<<32 | uint64(i+1), Local: p[i]})
			}
			if err := idx.Apply(&ev); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return prompts
}

// BenchmarkLookupDropouts times lookups where workers drop out of the match
// at many positions (buildStaggered), each on its own (p50-ns, p99-ns):
// copies=1 repeats one prompt (warm caches), copies>1 cycles through the
// copies, about 2M (worker, block) pairs in all, so that each lookup
// finds the index's lines cold, as lookups between writes in a replay do.
//
//	go test ./indexer -run '^$' -bench LookupDropouts -benchtime 20000x
func BenchmarkLookupDropouts(b *testing.B) {
	for _, ix := range benchIndexes {
		for _, shape := range []struct{ blocks, copies int }{{64, 1}, {64, 1024}, {512, 1}, {512, 128}} {
			const workers = 64
			b.Run(fmt.Sprintf("index=%s/blocks=%d/workers=%d/copies=%d", ix.name, shape.blocks, workers, shape.copies), func(b *testing.B) {
				idx := ix.new()
				prompts := buildStaggered(b, idx, shape.blocks, workers, shape.copies)
				dst := idx.AppendMatches(nil, prompts[0])
				if len(dst) != workers {
					b.Fatalf("%d workers matched, want %d", len(dst), workers)
				}
				lat := make([]time.Duration, 0, min(b.N, 1<<22))
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					p := prompts[i%len(prompts)]
					t0 := time.Now()
					dst = idx.AppendMatches(dst[:0], p)
					if d := time.Since(t0); len(lat) < cap(lat) {
						lat = append(lat, d)
					}
				}
				b.StopTimer()
				slices.Sort(lat)
				q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) }
				b.ReportMetric(q(0.50), "p50-ns")
				b.ReportMetric(q(0.99), "p99-ns")
			})
		}
	}
}
