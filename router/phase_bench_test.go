package router

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

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
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = fmt.Sprint("r", i)
	}
	now := time.Unix(0, 0)
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
