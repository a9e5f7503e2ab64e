package indexer_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
)

// buildCold fills idx with conversations of 64 to 127 blocks over 64
// workers, about a million entries in all (far beyond the caches): each
// conversation starts with its group's 16-block system prompt (64 groups)
// and is held by 1 to 3 random workers, each to a random depth of at least
// 8 blocks, so a lookup of its first 64 blocks loses workers at scattered
// positions. It returns the conversations' local hashes.
func buildCold(tb testing.TB, idx indexer.Index, convs int) [][]uint64 {
	const workers, groups, system = 64, 64, 16
	rng := rand.New(rand.NewPCG(7, uint64(convs)))
	prompts := make([][]uint64, groups)
	for g := range prompts {
		prompts[g] = make([]uint64, system)
		for i := range prompts[g] {
			prompts[g][i] = rng.Uint64()
		}
	}
	convLocals := make([][]uint64, convs)
	ev := kvevents.Event{Kind: kvevents.KindStored}
	for c := range convLocals {
		n := 64 + rng.IntN(64)
		l := append(make([]uint64, 0, n), prompts[c%groups]...)
		for len(l) < n {
			l = append(l, rng.Uint64())
		}
		convLocals[c] = l
		for range 1 + rng.IntN(3) {
			w := rng.IntN(workers)
			depth := 8 + rng.IntN(n-7)
			ev.WorkerID = uint64(w)
			ev.Blocks = ev.Blocks[:0]
			for i := range depth {
				// Engine hashes name the prefix, as an engine's do: the
				// system prompt's blocks are the group's.
				h := uint64(c)<<8 | uint64(i)
				if i < system {
					h = 1<<63 | uint64(c%groups)<<8 | uint64(i)
				}
				ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: h, Local: l[i]})
			}
			if err := idx.Apply(&ev); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return convLocals
}

// BenchmarkLookupCold times lookups of the first 64 blocks of random
// conversations (buildCold, about a million entries over 64 workers) each
// on its own (p50-ns, p99-ns), in a random order, so that each finds the
// index's lines cold, as the lookups of `kvrouter-study bench index` with no
// writers do (internal/benchindex's BenchmarkIdleLookups replays those).
// shards=2 is indexer.Sharded over two Flash indexes.
//
//	go test ./indexer -run '^$' -bench LookupCold -benchtime 100000x
func BenchmarkLookupCold(b *testing.B) {
	const convs = 12288
	for _, ix := range []struct {
		name string
		new  func() indexer.Index
	}{
		{"flash/shards=1", func() indexer.Index { return indexer.NewFlash(indexer.FlashConfig{}) }},
		{"flash/shards=2", func() indexer.Index {
			return indexer.NewSharded(2, func() indexer.Index { return indexer.NewFlash(indexer.FlashConfig{}) })
		}},
	} {
		b.Run("index="+ix.name, func(b *testing.B) {
			idx := ix.new()
			convLocals := buildCold(b, idx, convs)
			a := idx.(interface {
				AppendMatches(indexer.Overlaps, []uint64) indexer.Overlaps
			})
			rng := rand.New(rand.NewPCG(9, 9))
			order := make([]int, 1<<16)
			for i := range order {
				order[i] = rng.IntN(convs)
			}
			var dst indexer.Overlaps
			matched := 0
			lat := make([]time.Duration, 0, min(b.N, 1<<22))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				p := convLocals[order[i%len(order)]][:64]
				t0 := time.Now()
				dst = a.AppendMatches(dst[:0], p)
				if d := time.Since(t0); len(lat) < cap(lat) {
					lat = append(lat, d)
				}
				matched += len(dst)
			}
			b.StopTimer()
			if matched == 0 {
				b.Fatal("no lookup matched a worker")
			}
			slices.Sort(lat)
			q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) }
			b.ReportMetric(q(0.50), "p50-ns")
			b.ReportMetric(q(0.99), "p99-ns")
			b.ReportMetric(float64(idx.Stats().Nodes), "entries")
		})
	}
}
