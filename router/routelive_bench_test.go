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
	for _, w := range []int{8, 64} {
		for _, inflight := range []int{0, 32} {
			b.Run(fmt.Sprintf("blocks=%d/workers=%d/inflight=%d", liveBlocks, w, inflight), func(b *testing.B) {
				benchLive(b, w, inflight, settleNone)
			})
		}
	}
}

const liveBlocks = 512

// settleMode is how benchLive settles (BenchmarkRouteLiveDeferred).
type settleMode uint8

const (
	settleNone   settleMode = iota // Route books, Free frees: nothing deferred
	settleGap                      // deferred; wait for the settler after each request
	settleBurst                    // deferred; wake the settler and go on
	settleInline                   // deferred; Settle on the caller's thread, untimed
)

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

// BenchmarkRouteLiveDeferred is BenchmarkRouteLive's inflight=32 as a
// shell with Options.Deferred runs it: Route returns before booking, the
// end is FreeLater, and a settler goroutine applies them (Settle)
// concurrently with the caller. settle=gap waits, untimed, for the
// settler after each route and end: requests that arrive further apart
// than a settle takes, as in a server at tens of requests per second.
// settle=burst only wakes it (a non-blocking send) and routes on at once:
// a route then finds the previous booking and end unsettled, or the
// settler holding the lock, and pays for them. settle=inline calls Settle
// itself, untimed, after each request: the route without its booking, on
// caches the settle left warm on its own core (gap's settle runs on
// another thread). p50-ns/p99-ns are Route's,
// free-p50-ns/free-p99-ns FreeLater's; route-settled is the fraction of
// routes that applied unsettled work first.
func BenchmarkRouteLiveDeferred(b *testing.B) {
	for _, w := range []int{8, 64} {
		for _, mode := range []settleMode{settleGap, settleBurst, settleInline} {
			name := map[settleMode]string{settleGap: "gap", settleBurst: "burst", settleInline: "inline"}[mode]
			b.Run(fmt.Sprintf("blocks=%d/workers=%d/inflight=32/settle=%s", liveBlocks, w, name), func(b *testing.B) {
				benchLive(b, w, 32, mode)
			})
		}
	}
}

// benchLive routes b.N requests over w workers, each freed inflight
// requests later, settled as mode says (BenchmarkRouteLive,
// BenchmarkRouteLiveDeferred).
func benchLive(b *testing.B, w, inflight int, mode settleMode) {
	const bs, cpuEvery = 64, 8
	r, base := overheadRouterWith(b, w, liveBlocks, bs, Options{Deferred: mode != settleNone})
	prompts := [][]uint32{base}
	if inflight > 0 {
		prompts = livePrompts(base, bs, 64)
	}
	ids, lat, cands := overheadBuffers(b, w)
	flat := make([]time.Duration, 0, cap(lat))
	ctx := context.Background()
	now := time.Unix(0, 0)
	kick, ack := make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(ack)
		for range kick {
			r.Settle()
			if mode == settleGap {
				ack <- struct{}{}
			}
		}
	}()
	settle := func() {
		switch mode {
		case settleGap:
			kick <- struct{}{}
			<-ack
		case settleInline:
			r.Settle()
		case settleBurst:
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	}
	free := func(i int) {
		t0 := time.Now()
		if mode == settleNone {
			if err := r.Free(ids[i%len(ids)], now); err != nil {
				b.Fatal(err)
			}
		} else {
			r.FreeLater(ids[i%len(ids)], now)
		}
		if d := time.Since(t0); len(flat) < cap(flat) {
			flat = append(flat, d)
		}
	}
	before := r.SettleStats().RouteSettled
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
		settle()
	}
	clk.stop(b)
	inline := r.SettleStats().RouteSettled - before
	close(kick)
	for range ack {
	}
	for i := max(0, b.N-inflight); i < b.N; i++ {
		free(i)
	}
	r.Settle()
	if st := r.Stats(); st.Active != 0 {
		b.Fatalf("%d requests still active", st.Active)
	}
	clk.report(b)
	slices.Sort(flat)
	q := func(p float64) float64 { return float64(flat[int(p*float64(len(flat)-1))].Nanoseconds()) }
	b.ReportMetric(q(0.50), "free-p50-ns")
	b.ReportMetric(q(0.99), "free-p99-ns")
	if mode != settleNone {
		b.ReportMetric(float64(inline)/float64(b.N), "route-settled")
	}
}
