package router

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/selector"
)

// BenchmarkRoutePhases splits BenchmarkRouteOverhead's route at 64
// workers into its three phases, each timed on its own per request:
// hash-p50-ns (prepare: the prompt's local hashes and sequence chain),
// lookup-p50-ns (lookupKV: the index walk) and decide-p50-ns (routeLocked
// under the lock: candidates, scoring, booking), with total-p50-ns their
// sum's median. Where BenchmarkRouteOverhead says how long a route takes,
// this says where the time goes, with less noise than a profile.
func BenchmarkRoutePhases(b *testing.B) {
	const blocks, bs, w = 512, 64, 64
	r, toks := overheadRouter(b, w, blocks, bs)
	routePhases(b, r, toks, w, time.Unix(0, 0))
}

// BenchmarkRoutePhasesBusy is BenchmarkRoutePhases on a busy fleet: every
// worker runs three requests of its own (prompts of 1 to 8 blocks sharing
// the routed prompt's first blocks, the first of each worker decoding),
// so every candidate has load and a dated pass in flight, which the idle
// fleet of BenchmarkRoutePhases never shows the scorer (the pass model's
// roll, the decode term) nor candidates (each pass timed from now).
func BenchmarkRoutePhasesBusy(b *testing.B) {
	const blocks, bs, w = 512, 64, 64
	r, toks := overheadRouter(b, w, blocks, bs)
	now := time.Unix(0, 0)
	ctx := context.Background()
	for i := range w {
		for j := range 3 {
			id := fmt.Sprint("bg", i, "-", j)
			n := ((i+j)%8 + 1) * bs
			req := Request{ID: id, Tokens: toks[:n], Constraints: selector.Constraints{Pin: &kvevents.Worker{ID: uint64(i + 1)}}}
			if _, err := r.Route(ctx, req, now); err != nil {
				b.Fatal(err)
			}
			now = now.Add(time.Millisecond)
			if j == 0 {
				if err := r.PrefillDone(id, now); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	routePhases(b, r, toks, w, now)
}

// routePhases routes toks b.N times from now on (20 µs apart), freeing
// each request after its decision, and reports the phases' p50s.
func routePhases(b *testing.B, r *Router, toks []uint32, w int, now time.Time) {
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = fmt.Sprint("r", i)
	}
	cands := make([]selector.Breakdown, w)
	var ph [4][]time.Duration
	for k := range ph {
		ph[k] = make([]time.Duration, 0, min(b.N, 1<<20))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now = now.Add(20 * time.Microsecond)
		req := Request{ID: ids[i%len(ids)], Tokens: toks, Candidates: cands}
		t0 := time.Now()
		p, err := r.prepare(&req)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		r.lookupKV(p)
		t2 := time.Now()
		r.mu.Lock()
		_, _, err = r.routeLocked(p, now, true)
		r.mu.Unlock()
		t3 := time.Now()
		putPending(p)
		if err != nil {
			b.Fatal(err)
		}
		if len(ph[0]) < cap(ph[0]) {
			ph[0] = append(ph[0], t1.Sub(t0))
			ph[1] = append(ph[1], t2.Sub(t1))
			ph[2] = append(ph[2], t3.Sub(t2))
			ph[3] = append(ph[3], t3.Sub(t0))
		}
		if err := r.Free(req.ID, now); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for k, name := range []string{"hash", "lookup", "decide", "total"} {
		slices.Sort(ph[k])
		b.ReportMetric(float64(ph[k][len(ph[k])/2].Nanoseconds()), name+"-p50-ns")
	}
}
