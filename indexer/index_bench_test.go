package indexer_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
)

// appendIndex is an Index with the allocation-free lookup.
type appendIndex interface {
	indexer.Index
	AppendMatches(dst indexer.Overlaps, locals []uint64) indexer.Overlaps
}

var benchIndexes = []struct {
	name string
	new  func() appendIndex
}{
	{"radix", func() appendIndex { return indexer.NewRadix(indexer.RadixConfig{}) }},
	{"flash", func() appendIndex { return indexer.NewFlash(indexer.FlashConfig{}) }},
}

// buildShared fills idx with a prompt of depth blocks shared by workers:
// worker i holds its first depth - (i%8)*depth/16 blocks (8 drop-out depths
// between 50% and 100% of the prompt), plus a private 4-block branch after
// the second block, so the tree is branchy and the walk loses workers on
// the way. It returns the prompt's local hashes.
func buildShared(tb testing.TB, idx indexer.Index, depth, workers int) []uint64 {
	rng := rand.New(rand.NewPCG(uint64(depth), uint64(workers)))
	prompt := make([]uint64, depth)
	for i := range prompt {
		prompt[i] = rng.Uint64()
	}
	for w := range workers {
		n := depth - (w%8)*depth/16
		ev := kvevents.Event{WorkerID: uint64(w), Kind: kvevents.KindStored}
		for i := range n {
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: uint64(i + 1), Local: prompt[i]})
		}
		if err := idx.Apply(&ev); err != nil {
			tb.Fatal(err)
		}
		if depth > 2 {
			br := kvevents.Event{WorkerID: uint64(w), Kind: kvevents.KindStored, HasParent: true, Parent: 2}
			for i := range 4 {
				br.Blocks = append(br.Blocks, kvevents.Block{Hash: uint64(1<<32 + i), Local: rng.Uint64()})
			}
			if err := idx.Apply(&br); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return prompt
}

// BenchmarkFindMatches: lookup of a depth-block prompt over W workers.
//
//	go test ./indexer -run '^$' -bench FindMatches -benchtime 2000x
func BenchmarkFindMatches(b *testing.B) {
	for _, ix := range benchIndexes {
		for _, depth := range []int{16, 64, 128, 1024} {
			for _, workers := range []int{8, 64, 1024} {
				b.Run(fmt.Sprintf("index=%s/depth=%d/workers=%d", ix.name, depth, workers), func(b *testing.B) {
					idx := ix.new()
					prompt := buildShared(b, idx, depth, workers)
					dst := idx.AppendMatches(nil, prompt)
					if len(dst) != workers || dst[0].Blocks != depth {
						b.Fatalf("unexpected overlaps: %d workers, first %v", len(dst), dst[0])
					}
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						dst = idx.AppendMatches(dst[:0], prompt)
					}
					b.ReportMetric(float64(depth)*float64(b.N)/b.Elapsed().Seconds(), "blocks/s")
				})
			}
		}
	}
}

// BenchmarkStoreRemove: one worker stores a 16-block chain under a shared
// 64-block prefix, then evicts it leaf-first, among 64 workers.
//
//	go test ./indexer -run '^$' -bench StoreRemove
//
// Instruction counts (deterministic where the time is not), from a test
// binary: valgrind has no RDTSCP and its callgrind fails on Go's
// preemption signals, so both go off; the totals of a 20000x and a
// 40000x run differ by 20000 iterations (32 block ops each):
//
//	GODEBUG=cpu.rdtscp=off,asyncpreemptoff=1 valgrind --tool=callgrind \
//		./indexer.test -test.run '^$' -test.bench StoreRemove/index=flash -test.benchtime 20000x
func BenchmarkStoreRemove(b *testing.B) {
	const chain = 16
	for _, ix := range benchIndexes {
		b.Run("index="+ix.name, func(b *testing.B) {
			idx := ix.new()
			buildShared(b, idx, 64, 64)
			rng := rand.New(rand.NewPCG(7, 7))
			store := kvevents.Event{Kind: kvevents.KindStored, HasParent: true, Parent: 33}
			remove := kvevents.Event{Kind: kvevents.KindRemoved}
			store.Blocks = make([]kvevents.Block, chain)
			remove.Hashes = make([]uint64, chain)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				w := uint64(i % 64)
				store.WorkerID, remove.WorkerID = w, w
				for j := range chain {
					h := uint64(1<<40 + j)
					store.Blocks[j] = kvevents.Block{Hash: h, Local: rng.Uint64()}
					remove.Hashes[chain-1-j] = h
				}
				if err := idx.Apply(&store); err != nil {
					b.Fatal(err)
				}
				if err := idx.Apply(&remove); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(2*chain)*float64(b.N)/b.Elapsed().Seconds(), "block-ops/s")
		})
	}
}

// BenchmarkBytesPerBlock measures heap bytes per cached (worker, block)
// pair, by runtime.MemStats, next to the index's own Stats.Bytes estimate.
// shape=shared: 64 workers on one 1024-block prefix tree (buildShared);
// shape=unique: every block held by one worker only, 1024 per worker, each
// worker's in one event.
//
// Those two sit at one point of the tables' growth cycles (a table that
// grows by a factor g costs between 1 and g times its full size, depending
// on where the count falls), and 1024 blocks in one event size each worker
// table exactly. The -sweep shapes are the honest figure: the same shapes
// at 8 sizes spaced evenly in log scale over one doubling (1024 x 2^(k/8)
// blocks per worker, k = 0..7, unique ones stored in 64-block events),
// reporting the mean (heap-B/block), the lowest and the highest.
//
//	go test ./indexer -run '^$' -bench BytesPerBlock -benchtime 1x
func BenchmarkBytesPerBlock(b *testing.B) {
	for _, ix := range benchIndexes {
		for _, shape := range []string{"shared", "unique", "shared-sweep", "unique-sweep"} {
			b.Run("index="+ix.name+"/shape="+shape, func(b *testing.B) {
				var heap, est, lo, hi float64
				for b.Loop() {
					heap, est, lo, hi = 0, 0, 0, 0
					sizes := []int{1024}
					if strings.HasSuffix(shape, "-sweep") {
						sizes = sizes[:0]
						for k := range 8 {
							sizes = append(sizes, int(math.Round(1024*math.Pow(2, float64(k)/8))))
						}
					}
					for _, n := range sizes {
						h, e := bytesPerBlock(b, ix.new, shape, n)
						heap, est = heap+h/float64(len(sizes)), est+e/float64(len(sizes))
						if lo == 0 || h < lo {
							lo = h
						}
						hi = max(hi, h)
					}
				}
				b.ReportMetric(heap, "heap-B/block")
				b.ReportMetric(est, "stats-B/block")
				if strings.HasSuffix(shape, "-sweep") {
					b.ReportMetric(lo, "min-heap-B/block")
					b.ReportMetric(hi, "max-heap-B/block")
				}
			})
		}
	}
}

// bytesPerBlock builds one index of shape with n blocks per worker and
// returns its heap and Stats bytes per cached (worker, block).
func bytesPerBlock(b *testing.B, newIndex func() appendIndex, shape string, n int) (heap, est float64) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	idx := newIndex()
	switch shape {
	case "shared", "shared-sweep":
		buildShared(b, idx, n, 64)
	default:
		span := 64
		if shape == "unique" {
			span = n
		}
		rng := rand.New(rand.NewPCG(3, 3))
		for w := range 64 {
			for start := 0; start < n; start += span {
				ev := kvevents.Event{WorkerID: uint64(w), Kind: kvevents.KindStored}
				if start > 0 {
					ev.HasParent, ev.Parent = true, uint64(start)
				}
				for i := start; i < min(start+span, n); i++ {
					ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: uint64(i + 1), Local: rng.Uint64()})
				}
				if err := idx.Apply(&ev); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	s := idx.Stats()
	runtime.KeepAlive(idx)
	blocks := float64(s.Blocks)
	return float64(m1.HeapAlloc-m0.HeapAlloc) / blocks, float64(s.Bytes) / blocks
}
