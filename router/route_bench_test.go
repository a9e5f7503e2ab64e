package router

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/cputime"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/selector"
)

// BenchmarkRouteOverhead is the router's own cost per request on a long
// prompt: Route = hash the tokens into blocks + look the blocks up in the
// index + score every worker + book the chosen one, for a 32k-token prompt
// (512 blocks at B=64) over 64 workers whose caches hold prefixes of it of
// various depths. Each Route is timed on its own, so the tail is reported
// as well as the mean (p50-ns, p99-ns); Free runs outside the timed part,
// so the load tracker stays small and steady. ns/op and allocs/op cover
// Route and Free. The caller passes its own Decision.Candidates buffer
// (Request.Candidates), as an allocation-free caller does. The tail has
// two suspects besides the work: GCs counts the collections during the
// timed loop, and cpu-p50-ns/cpu-p99-ns are the same quantiles of a
// Route's own thread CPU time (the goroutine is locked to its thread), so
// a wall-clock tail far above the CPU tail is time spent descheduled.
// The CPU clock is read around one route in cpuEvery only, and those
// routes stay out of p50-ns/p99-ns: the clock is a system call, and one
// just before a route made it ~0.9 µs slower (4 alternated rounds, 64
// workers, pinned to one CPU: wall p50 10.1-10.3 µs with the clock read
// around every route, 9.2-9.4 µs without), as it did trace lookups in
// bench index. The clock advances 20 µs per request (a 50k requests/s
// router), so each booking refreshes the predicted side index's blocks
// at a new expiry, which moves them in its expiry order.
func BenchmarkRouteOverhead(b *testing.B) {
	const blocks, bs, cpuEvery = 512, 64, 8
	for _, w := range []int{8, 64} {
		b.Run(fmt.Sprintf("blocks=%d/workers=%d", blocks, w), func(b *testing.B) {
			r, toks := overheadRouter(b, w, blocks, bs)
			ids, lat, cands := overheadBuffers(b, w)
			ctx := context.Background()
			now := time.Unix(0, 0)
			clk := routeClock{lat: lat, cpu: make([]time.Duration, 0, cap(lat)), every: cpuEvery}
			clk.start(b)
			for i := range b.N {
				id := ids[i%len(ids)]
				now = now.Add(20 * time.Microsecond)
				clk.time(i, func() {
					if _, err := r.Route(ctx, Request{ID: id, Tokens: toks, Candidates: cands}, now); err != nil {
						b.Fatal(err)
					}
				})
				if err := r.Free(id, now); err != nil {
					b.Fatal(err)
				}
			}
			clk.stop(b)
			clk.report(b)
			b.ReportMetric(float64(len(toks))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// routeClock times routes for the overhead benchmarks: each on the wall
// clock, but one in every on its thread's CPU clock instead (see
// BenchmarkRouteOverhead), the goroutine locked to its thread.
type routeClock struct {
	lat, cpu []time.Duration
	every    int
	gcs      uint32
}

// start locks the thread, notes the GC count and resets the timer.
func (c *routeClock) start(b *testing.B) {
	runtime.LockOSThread()
	b.ReportAllocs()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c.gcs = ms.NumGC
	b.ResetTimer()
}

// time runs route (the i-th) and records its time.
func (c *routeClock) time(i int, route func()) {
	withCPU := i%c.every == c.every-1
	var c0 time.Duration
	cok := false
	if withCPU {
		c0, cok = cputime.Thread()
	}
	t0 := time.Now()
	route()
	d := time.Since(t0)
	if withCPU {
		if c1, _ := cputime.Thread(); cok && len(c.cpu) < cap(c.cpu) {
			c.cpu = append(c.cpu, c1-c0)
		}
	} else if len(c.lat) < cap(c.lat) {
		c.lat = append(c.lat, d)
	}
}

// stop stops the timer and reports the GCs since start.
func (c *routeClock) stop(b *testing.B) {
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.NumGC-c.gcs), "GCs")
	runtime.UnlockOSThread()
}

// report reports the timed routes' quantiles.
func (c *routeClock) report(b *testing.B) { reportTail(b, c.lat, c.cpu) }

// overheadBuffers returns the overhead benchmarks' request ids (1024,
// reused in turn), room for b.N latencies (at most 2^20) and the caller's
// Decision.Candidates buffer for w workers, reused: Free runs before the
// next Route and the decision is not kept.
func overheadBuffers(b *testing.B, w int) ([]string, []time.Duration, []selector.Breakdown) {
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = fmt.Sprint("r", i)
	}
	return ids, make([]time.Duration, 0, min(b.N, 1<<20)), make([]selector.Breakdown, w)
}

// overheadRouter builds a router with w workers (flash index, block size
// bs) whose device caches hold prefixes of one n-block prompt, worker i
// holding (i*37 mod n) blocks, and returns it with the prompt.
func overheadRouter(b *testing.B, w, n, bs int) (*Router, []uint32) {
	return overheadRouterWith(b, w, n, bs, Options{})
}

// overheadRouterWith is overheadRouter with opts (its Rand set here).
func overheadRouterWith(b *testing.B, w, n, bs int, opts Options) (*Router, []uint32) {
	b.Helper()
	cfg := DefaultConfig()
	cfg.BlockSize = bs
	opts.Rand = rand.New(rand.NewPCG(16, 6))
	r, err := New(cfg, opts)
	if err != nil {
		b.Fatal(err)
	}
	toks := make([]uint32, n*bs)
	for i := range toks {
		toks[i] = uint32(i*2654435761) >> 8
	}
	locals := kvhash.LocalHashes(toks, bs, kvhash.Seed("", ""))
	seq := kvhash.SeqHashes(locals)
	for i := range w {
		id := uint64(i + 1)
		if err := r.AddWorker(WorkerInfo{ID: id, MaxNumBatchedTokens: 8192}); err != nil {
			b.Fatal(err)
		}
		depth := i * 37 % n
		if depth == 0 {
			continue
		}
		ev := &kvevents.Event{WorkerID: id, Tier: kvevents.TierDevice, EventID: 1, Kind: kvevents.KindStored}
		for j := range depth {
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: seq[j], Local: locals[j]})
		}
		if err := r.ApplyEvent(ev); err != nil {
			b.Fatal(err)
		}
	}
	return r, toks
}

// reportTail reports the p50 and p99 of the wall and (when measured)
// thread-CPU times of the timed calls.
func reportTail(b *testing.B, lat, cpu []time.Duration) {
	q := func(xs []time.Duration, p float64) float64 {
		slices.Sort(xs)
		return float64(xs[int(p*float64(len(xs)-1))].Nanoseconds())
	}
	b.ReportMetric(q(lat, 0.50), "p50-ns")
	b.ReportMetric(q(lat, 0.99), "p99-ns")
	if len(cpu) > 0 {
		b.ReportMetric(q(cpu, 0.50), "cpu-p50-ns")
		b.ReportMetric(q(cpu, 0.99), "cpu-p99-ns")
	}
}
