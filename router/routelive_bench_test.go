package router

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkRouteLive is BenchmarkRouteOverhead on live state: the same
// router (512-block prompts at B=64 over w workers caching prefixes of a
// base prompt), but the requests cycle through 64 distinct prompts and
// each is freed inflight requests after it was routed, so the load
// tracker holds that many requests' blocks and most of a prompt's blocks
// are new to it, as in a live server. Prompt p shares the first p*37 mod
// 512 blocks of the base prompt (a system prompt or a conversation's
// history) and then has blocks of its own. The clock advances 20 µs per
// request; a freed booking reaches the predicted side index then
// (predictend.go). p50-ns/p99-ns are Route's; free-p50-ns/free-p99-ns
// are Free's, which runs under the same lock; ns/op and allocs/op cover
// both. As in RouteOverhead, one route in 8 is timed on its thread's CPU
// clock instead (cpu-p50-ns/cpu-p99-ns): on a shared machine a wall tail
// far above the CPU tail is time spent descheduled. inflight=0 routes
// one prompt freed at once: RouteOverhead's loop in this benchmark's
// binary, for the ratio.
func BenchmarkRouteLive(b *testing.B) {
	const blocks, bs, cpuEvery = 512, 64, 8
	for _, w := range []int{8, 64} {
		for _, inflight := range []int{0, 32} {
			b.Run(fmt.Sprintf("blocks=%d/workers=%d/inflight=%d", blocks, w, inflight), func(b *testing.B) {
				r, base := overheadRouter(b, w, blocks, bs)
				prompts := [][]uint32{base}
				if inflight > 0 {
					prompts = livePrompts(base, bs, 64)
				}
				ids, lat, cands := overheadBuffers(b, w)
				flat := make([]time.Duration, 0, cap(lat))
				ctx := context.Background()
				now := time.Unix(0, 0)
				free := func(i int) {
					t0 := time.Now()
					if err := r.Free(ids[i%len(ids)], now); err != nil {
						b.Fatal(err)
					}
					if d := time.Since(t0); len(flat) < cap(flat) {
						flat = append(flat, d)
					}
				}
				clk := routeClock{lat: lat, cpu: make([]time.Duration, 0, cap(lat)), every: cpuEvery}
				clk.start(b)
				for i := range b.N {
					now = now.Add(20 * time.Microsecond)
					clk.time(i, func() {
						if _, err := r.Route(ctx, Request{ID: ids[i%len(ids)], Tokens: prompts[i%len(prompts)], Candidates: cands}, now); err != nil {
							b.Fatal(err)
						}
					})
					if i >= inflight {
						free(i - inflight)
					}
				}
				clk.stop(b)
				for i := max(0, b.N-inflight); i < b.N; i++ {
					free(i)
				}
				clk.report(b)
				q := func(p float64) float64 {
					slices.Sort(flat)
					return float64(flat[int(p*float64(len(flat)-1))].Nanoseconds())
				}
				b.ReportMetric(q(0.50), "free-p50-ns")
				b.ReportMetric(q(0.99), "free-p99-ns")
			})
		}
	}
}

// livePrompts returns n prompts of base's length: prompt p is base up to
// block p*37 mod len(base)/bs, then tokens of its own.
func livePrompts(base []uint32, bs, n int) [][]uint32 {
	out := make([][]uint32, n)
	for p := range out {
		q := slices.Clone(base)
		for k := (p * 37 % (len(base) / bs)) * bs; k < len(q); k++ {
			q[k] ^= uint32(p+1) << 24
		}
		out[p] = q
	}
	return out
}
