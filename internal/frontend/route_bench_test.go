package frontend

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// BenchmarkServeRoute is the live server's cost of routing one request,
// beside the router core's in the same process, on router's
// BenchmarkRouteOverhead setup: a 32k-token prompt (512 blocks at B=64)
// over w workers whose device caches hold prefixes of it (worker i holds
// i*37 mod 512 blocks), Free before the next request; inflight=32 is the
// live-like variant (benchServeRoute).
//
//   - core: router.Route + Free on a bare router (router.DefaultConfig,
//     index not behind the sink), the caller's Candidates buffer reused:
//     BenchmarkRouteOverhead's loop.
//   - serve: what the proxy does between a parsed request and its
//     forward, on a Server from DefaultConfig with the events applied
//     through its sink: the request's job (newJob: id, headers), route
//     (routeHop: decision-log sample, queue waiter, Route with its
//     OnRoute metrics, tenant counts), the flight (timing-fit sample,
//     removal epoch), the worker and the response's route headers; then,
//     untimed in p50-ns/p99-ns but in ns/op, the flight's landing
//     (FreeLater, request metrics) and a Settle of the router's deferred
//     bookkeeping, which the server's settler does between requests
//     (settle.go; here on the same thread, caches warm).
//
// p50-ns/p99-ns are the timed part of each request (core: Route only);
// ns/op and allocs/op cover the whole loop. The prompt's JSON parsing and
// tokenization stay out: the router core does not do them either.
func BenchmarkServeRoute(b *testing.B) {
	const blocks, bs = 512, 64
	for _, w := range []int{8, 64} {
		for _, inflight := range []int{0, 32} {
			benchServeRoute(b, blocks, bs, w, inflight)
		}
	}
}

// benchServeRoute runs the core and serve loops of BenchmarkServeRoute
// for w workers. With inflight 0 every request is the same prompt and is
// freed before the next (BenchmarkRouteOverhead's setup); with inflight
// k the requests cycle through 64 distinct prompts (prompt p: the first
// p*37 mod 512 blocks of the cached prompt, then blocks of its own) and
// each is freed k requests later, so the load tracker holds k requests'
// blocks as in a live server and most blocks are new to it.
func benchServeRoute(b *testing.B, blocks, bs, w, inflight int) {
	base := benchPrompt(blocks * bs)
	prompts := [][]uint32{base}
	if inflight > 0 {
		prompts = benchPrompts(base, bs, 64)
	}
	name := fmt.Sprintf("blocks=%d/workers=%d/inflight=%d", blocks, w, inflight)
	b.Run(name+"/core", func(b *testing.B) {
		cfg := router.DefaultConfig()
		cfg.BlockSize = bs
		r, err := router.New(cfg, router.Options{Rand: rand.New(rand.NewPCG(16, 6))})
		if err != nil {
			b.Fatal(err)
		}
		for i := range w {
			if err := r.AddWorker(router.WorkerInfo{ID: uint64(i + 1), MaxNumBatchedTokens: 8192}); err != nil {
				b.Fatal(err)
			}
		}
		for _, ev := range benchEvents(base, bs, w) {
			if err := r.ApplyEvent(ev); err != nil {
				b.Fatal(err)
			}
		}
		cands := make([][]selector.Breakdown, inflight+1)
		for i := range cands {
			cands[i] = make([]selector.Breakdown, w)
		}
		ctx := context.Background()
		lat := make([]time.Duration, 0, min(b.N, 1<<20))
		free := func(i int) {
			if err := r.Free(benchIDs[i%len(benchIDs)], time.Now()); err != nil {
				b.Fatal(err)
			}
		}
		benchLoop(b, &lat, func(i int) time.Duration {
			id := benchIDs[i%len(benchIDs)]
			t0 := time.Now()
			if _, err := r.Route(ctx, router.Request{ID: id, Tokens: prompts[i%len(prompts)], Candidates: cands[i%len(cands)]}, time.Now()); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t0)
			if i >= inflight {
				free(i - inflight)
			}
			return d
		})
		for i := max(0, b.N-inflight); i < b.N; i++ {
			free(i)
		}
	})
	b.Run(name+"/serve", func(b *testing.B) {
		s := newServerWith(b, false, func(c *Config) { c.Router.BlockSize = bs })
		for i := range w {
			if err := s.AddWorker(Worker{ID: uint64(i + 1), URL: "http://127.0.0.1:9",
				Info: router.WorkerInfo{MaxNumBatchedTokens: 8192}}); err != nil {
				b.Fatal(err)
			}
		}
		for _, ev := range benchEvents(base, bs, w) {
			if err := s.Apply(ev); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
		r, err := http.NewRequest(http.MethodPost, "/v1/completions", nil)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		lat := make([]time.Duration, 0, min(b.N, 1<<20))
		hdr := http.Header{}
		ring := make([]*flight, inflight+1)
		land := func(f *flight) {
			f.answered(http.StatusOK, time.Now())
			f.land(time.Now())
		}
		benchLoop(b, &lat, func(i int) time.Duration {
			t0 := time.Now()
			j, e := s.newJob(r, EndpointCompletions)
			if e != nil {
				b.Fatal(e)
			}
			j.tokens, j.body, j.stream = prompts[i%len(prompts)], benchBody, true
			j.lora = s.adapters.LoRA(j.model)
			f, err := s.place(ctx, j, nil)
			if err != nil {
				b.Fatal(err)
			}
			wk, ok := s.pool.Get(f.d.Worker.ID)
			if !ok {
				b.Fatal("no worker", f.d.Worker.ID)
			}
			_ = s.bodyFor(j, wk.ID)
			setRouteHeaders(hdr, j.id, f.d)
			el := time.Since(t0)
			ring[i%len(ring)] = f
			if old := ring[(i+1)%len(ring)]; old != nil { // the request inflight before
				land(old)
				ring[(i+1)%len(ring)] = nil
			}
			// The settler's work; without it the next place would settle
			// this booking and end itself.
			s.rt.Settle()
			return el
		})
		for _, f := range ring {
			if f != nil {
				land(f)
			}
		}
	})
}

// benchPrompts returns n prompts as long as base: prompt p is base's
// first p*37 mod len(base)/bs blocks, then tokens of its own.
func benchPrompts(base []uint32, bs, n int) [][]uint32 {
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

// benchIDs are the core loop's request ids, reused in turn (each is freed
// before the next route).
var benchIDs = func() []string {
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = fmt.Sprint("r", i)
	}
	return ids
}()

// benchBody stands for the forwarded body (the route never reads it).
var benchBody = []byte(`{"model":"kvrouter-mock","prompt":[1],"stream":true}`)

// benchPrompt is an n-token prompt (router's overhead benchmarks' tokens).
func benchPrompt(n int) []uint32 {
	toks := make([]uint32, n)
	for i := range toks {
		toks[i] = uint32(i*2654435761) >> 8
	}
	return toks
}

// benchEvents stores, for each of w workers (ids 1..w), the first
// i*37 mod n blocks of toks on worker i's device.
func benchEvents(toks []uint32, bs, w int) []*kvevents.Event {
	n := len(toks) / bs
	locals := kvhash.LocalHashes(toks, bs, kvhash.Seed("", ""))
	seq := kvhash.SeqHashes(locals)
	var evs []*kvevents.Event
	for i := range w {
		depth := i * 37 % n
		if depth == 0 {
			continue
		}
		ev := &kvevents.Event{WorkerID: uint64(i + 1), Tier: kvevents.TierDevice, EventID: 1, Kind: kvevents.KindStored}
		for j := range depth {
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: seq[j], Local: locals[j]})
		}
		evs = append(evs, ev)
	}
	return evs
}

// benchLoop runs one b.N loop of step (which returns its timed part) on
// a locked thread and reports the timed parts' p50 and p99 and the GCs.
func benchLoop(b *testing.B, lat *[]time.Duration, step func(i int) time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gcs := ms.NumGC
	b.ResetTimer()
	for i := range b.N {
		if d := step(i); len(*lat) < cap(*lat) {
			*lat = append(*lat, d)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.NumGC-gcs), "GCs")
	xs := *lat
	slices.Sort(xs)
	q := func(p float64) float64 { return float64(xs[int(p*float64(len(xs)-1))].Nanoseconds()) }
	b.ReportMetric(q(0.50), "p50-ns")
	b.ReportMetric(q(0.99), "p99-ns")
}
