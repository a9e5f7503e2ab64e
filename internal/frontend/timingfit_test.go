package frontend

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
	"github.com/prometheus/client_golang/prometheus"
)

func scaled(sp, sd float64) selector.Timing {
	t := selector.DefaultTiming()
	t.PrefillQuad, t.PrefillLin, t.PrefillConst = sp*t.PrefillQuad, sp*t.PrefillLin, sp*t.PrefillConst
	t.DecodeQuad, t.DecodeLin, t.DecodeConst = sd*t.DecodeQuad, sd*t.DecodeLin, sd*t.DecodeConst
	return t
}

// The feeding arithmetic: a decision priced with a fitted model (scales
// 0.5 and 3) divided by those scales is exactly what the prior predicts
// for the same candidate, queued prefill and decode share included.
func TestPriorPrediction(t *testing.T) {
	cfg := selector.DefaultConfig()
	c := selector.Candidate{Worker: kvevents.Worker{ID: 7}, MaxNumBatchedTokens: 2048, ActivePrefillTokens: 5000,
		ActiveRequests: 6, PrefillRequests: 2, TotalKVBlocks: 1000, NewBlocks: 40, KVUsage: 0.3}
	c.Overlap[kvevents.TierDevice] = 10
	prior := selector.Cost(cfg, 3000, 64, 0, 0.5, &c)
	fitted := scaled(0.5, 3)
	c.Timing = &fitted
	fit := selector.Cost(cfg, 3000, 64, 0, 0.5, &c)
	fit.Worker = c.Worker
	other := selector.Breakdown{Worker: kvevents.Worker{ID: 8}, Prefill: 1, Decode: 1}
	d := router.Decision{Worker: c.Worker, Candidates: []selector.Breakdown{other, fit}}
	p, dec, u, ok := priorPrediction(&d, 0.5, 3)
	if !ok {
		t.Fatal("no prediction")
	}
	if math.Abs(p-prior.Prefill) > 1e-9*prior.Prefill || math.Abs(dec-prior.Decode) > 1e-9*prior.Decode || u != prior.Usage {
		t.Fatalf("prior prediction %v/%v/%v, want %v/%v/%v", p, dec, u, prior.Prefill, prior.Decode, prior.Usage)
	}
	if prior.Decode <= 0 || prior.Passes < 3 {
		t.Fatalf("the case must have a decode share and several passes: %+v", prior)
	}
	d.Candidates[1].Out = selector.ReasonNotAllow
	if _, _, _, ok := priorPrediction(&d, 0.5, 3); ok {
		t.Fatal("a filtered chosen candidate gave a prediction")
	}
}

// The median gap ignores a stall and a burst of coalesced tokens, and a
// request with fewer than minGaps gaps reports no ITL.
func TestFitObsMedianGap(t *testing.T) {
	t0 := time.Unix(100, 0)
	o := &fitObs{}
	at := t0
	for _, ms := range []int{0, 5, 5, 0, 10, 5, 400, 5} { // first token, then gaps
		at = at.Add(time.Duration(ms) * time.Millisecond)
		o.token(at)
	}
	if g, ok := o.medianGap(); !ok || g != 5 {
		t.Fatalf("median gap %v, %v; want 5", g, ok)
	}
	short := &fitObs{}
	for i := range minGaps {
		short.token(t0.Add(time.Duration(i) * time.Millisecond))
	}
	if _, ok := short.medianGap(); ok {
		t.Fatalf("%d gaps gave an ITL", minGaps-1)
	}
}

// Fed a worker 4x faster than the prior, the fit the router prices it
// with moves toward 4x faster and stays within the prior's reach: after
// 60 requests both scales are between 1/4 and 0.6; a single 50x stall
// then moves the prefill scale by at most one clipped step. A worker
// never observed keeps the prior (no model of its own).
func TestTimingFitFeedsRouter(t *testing.T) {
	rc := router.DefaultConfig()
	rt, err := router.New(rc, router.Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{1, 2} {
		if err := rt.AddWorker(router.WorkerInfo{ID: id, MaxNumBatchedTokens: 8192, TotalKVBlocks: 1000, BlockSize: rc.BlockSize}); err != nil {
			t.Fatal(err)
		}
	}
	f := newTimingFits(prometheus.NewRegistry(), rt, selector.Timing{})
	prior := selector.DefaultTiming()
	t0 := time.Unix(100, 0)
	for i := range 60 {
		sp := 1.0
		if w := f.fits[1]; w != nil {
			sp = w.sp
		}
		// The decision the router took with the model it holds.
		tm, ok := rt.WorkerTiming(1)
		if i > 0 && (!ok || math.Abs(tm.PrefillLin-sp*prior.PrefillLin) > 1e-12) {
			t.Fatalf("request %d: router holds %+v, fit pushed scale %v", i, tm, sp)
		}
		const prefill, itl = 60.0, 5.74 // prior ms
		d := router.Decision{Worker: kvevents.Worker{ID: 1},
			Candidates: []selector.Breakdown{{Worker: kvevents.Worker{ID: 1}, Prefill: prefill * sp, Decode: 0, Usage: 0}}}
		o := f.begin(&d, t0)
		at := t0.Add(time.Duration(prefill / 4 * float64(time.Millisecond)))
		for range 9 {
			o.token(at)
			at = at.Add(time.Duration(itl / 4 * float64(time.Millisecond)))
		}
		f.observe(o)
	}
	s, ok := f.summary(1), f.summary(1) != nil
	if !ok || s.TTFTObs != 60 || s.ITLObs != 60 {
		t.Fatalf("summary %+v", s)
	}
	for name, v := range map[string]float64{"prefill": s.PrefillScale, "decode": s.DecodeScale} {
		if v < 0.25 || v > 0.6 {
			t.Errorf("%s scale %v after 60 requests 4x faster, want in [0.25, 0.6]", name, v)
		}
	}
	// One stall of 50x its prediction.
	before := s.PrefillScale
	d := router.Decision{Worker: kvevents.Worker{ID: 1},
		Candidates: []selector.Breakdown{{Worker: kvevents.Worker{ID: 1}, Prefill: 60 * before}}}
	o := f.begin(&d, t0)
	o.token(t0.Add(3 * time.Second))
	f.observe(o)
	after := f.summary(1).PrefillScale
	if step := math.Log(after / before); step <= 0 || step > math.Ln2/(61+20)+1e-12 {
		t.Fatalf("a 50x stall moved the prefill scale %v -> %v (log step %v)", before, after, step)
	}
	if _, ok := rt.WorkerTiming(2); ok || f.summary(2) != nil {
		t.Fatal("worker 2 was never observed but has a model")
	}
}
