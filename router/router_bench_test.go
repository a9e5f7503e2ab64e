package router

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/selector"
)

// BenchmarkRoute routes a 64-block prompt over W workers whose caches hold
// prefixes of it of various depths, then frees it (the load tracker stays
// small and steady).
func BenchmarkRoute(b *testing.B) {
	for _, w := range []int{8, 64} {
		b.Run(fmt.Sprintf("blocks=64/workers=%d", w), func(b *testing.B) {
			r, toks := benchRouter(b, w)
			ids := make([]string, 1024)
			for i := range ids {
				ids[i] = fmt.Sprint("r", i)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				id := ids[i%len(ids)]
				if _, err := r.Route(ctx, Request{ID: id, Tokens: toks}, epoch); err != nil {
					b.Fatal(err)
				}
				if err := r.Free(id, epoch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "routes/s")
		})
	}
}

// benchRouter builds a router with w workers (B=16, flash indexes) whose
// device caches hold prefixes of a 64-block prompt of various depths, each
// with a small pinned background request, and returns it with the prompt.
func benchRouter(b *testing.B, w int) (*Router, []uint32) {
	b.Helper()
	cfg := DefaultConfig()
	cfg.BlockSize = 16
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		b.Fatal(err)
	}
	toks := make([]uint32, 64*16)
	for i := range toks {
		toks[i] = uint32(i)
	}
	for i := range w {
		if err := r.AddWorker(WorkerInfo{ID: uint64(i + 1), MaxNumBatchedTokens: 8192}); err != nil {
			b.Fatal(err)
		}
		depth := (i * 7 % 64) * 16
		if depth > 0 {
			if err := r.ApplyEvent(storedEvent(r, kvevents.Worker{ID: uint64(i + 1)}, kvevents.TierDevice, toks[:depth], "", "", 1)); err != nil {
				b.Fatal(err)
			}
		}
		// Some background load.
		if _, err := r.Route(context.Background(), Request{ID: fmt.Sprint("bg", i), Tokens: toks[:(i%5+1)*16], Constraints: pin(uint64(i + 1))}, epoch); err != nil {
			b.Fatal(err)
		}
	}
	return r, toks
}

func pin(id uint64) (c selectorConstraints) {
	w := kvevents.Worker{ID: id}
	c.Pin = &w
	return c
}

type selectorConstraints = selector.Constraints

// BenchmarkRouteParallel is BenchmarkRoute's 64-worker case from
// GOMAXPROCS goroutines at once: hashing and index lookups run outside the
// router's lock, the decision under it.
func BenchmarkRouteParallel(b *testing.B) {
	const w = 64
	r, toks := benchRouter(b, w)
	const perG = 1024
	ids := make([]string, 256*perG)
	for i := range ids {
		ids[i] = fmt.Sprint("r", i)
	}
	var gs atomic.Int64
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := int(gs.Add(1)-1) % 256 // each goroutine owns its ids
		mine := ids[g*perG : (g+1)*perG]
		for i := 0; pb.Next(); i++ {
			id := mine[i%perG]
			if _, err := r.Route(ctx, Request{ID: id, Tokens: toks}, epoch); err != nil {
				b.Error(err)
				return
			}
			if err := r.Free(id, epoch); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "routes/s")
}
