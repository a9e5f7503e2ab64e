package frontend

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
	"github.com/prometheus/client_golang/prometheus"
)

// passEngine is a discrete-event model of one engine rank as DESIGN.md §6
// (and selector's pass model) describe it: one forward pass at a time;
// each pass gives every decoding request one token and takes the pending
// prefill first come first served up to the budget left; it lasts
// model.PrefillTime(prefill tokens) plus model.DecodeTime(0) when a
// request decodes. A request's first token comes at the end of the pass that
// computes its last prompt token.
type passEngine struct {
	model  selector.Timing // the rank's true speed
	budget int             // max_num_batched_tokens

	queue    []*simReq // prefill pending, FCFS
	decoding []*simReq
	batch    []prefillPart
	dec      []*simReq // decoding in the pass in flight
	end      float64   // pass in flight ends (ms); NaN: idle
}

type prefillPart struct {
	r   *simReq
	tok int
}

type simReq struct {
	id      string
	left    int // prompt tokens still to compute
	outputs int // tokens still to stream after the first (-1: forever)
	obs     *fitObs
}

// start begins a pass at now, or leaves the engine idle with nothing to do.
func (e *passEngine) start(now float64) {
	e.batch, e.dec = e.batch[:0], append(e.dec[:0], e.decoding...)
	room := max(1, e.budget-len(e.dec))
	tok := 0
	for _, r := range e.queue {
		if room == 0 {
			break
		}
		take := min(room, r.left)
		e.batch = append(e.batch, prefillPart{r, take})
		room -= take
		tok += take
	}
	if tok == 0 && len(e.dec) == 0 {
		e.end = math.NaN()
		return
	}
	d := e.model.PrefillTime(float64(tok))
	if len(e.dec) > 0 {
		d += e.model.DecodeTime(0)
	}
	e.end = now + d
}

// TestTimingFitUnderPassModel feeds the online fit (timingFits, as the
// proxy does) from a simulated rank (passEngine) whose true model is the
// prior with its prefill and decode polynomials scaled, routed by the real
// router with the pass model on. The pass model's "time left of the pass
// in flight" subtracts real elapsed time from a modeled pass, so a
// decision's Prefill is not the prior's times the fitted scale, as
// priorPrediction assumes. That does not bias the fit: an observation's
// prediction is the decision's own (its Prefill over sp, times the fit's
// sp), so the fit settles where the decisions' predictions are unbiased,
// wherever it starts.
//
//   - A rank 2x slower than the prior ends at the same model whether the
//     fit starts at the prior or at the true model.
//   - The fitted scale is proportional to the rank's speed: a rank k
//     times slower, with arrivals k times further apart (the same queues
//     in its own time), is fitted at k times the scales of a rank at the
//     prior's speed, for k = 2 (from the prior) and 1/2 (from the prior).
//
// What the fit settles at for a rank at the prior's speed is not exactly
// 1: requests arriving after a request joins its last pass (the batch
// externality the router cannot see) make the pass model predict TTFT
// low, and the median inter-token gap counts passes shared with prefill
// chunks, so both scales end above 1 (prefill ~1.05, decode ~1.12 after
// 1000 requests at about half prefill utilization). That factor is the
// same for every rank at the same relative load, so ranks' fitted models
// keep the ratio of their true speeds.
func TestTimingFitUnderPassModel(t *testing.T) {
	const n, gap = 1000, 75.0 // requests; mean ms between arrivals at the prior's speed
	fit := func(prior, truth, gapScale float64) (sp, sd float64) {
		return runPassFit(t, scaled(prior, prior), scaled(truth, truth), n, gap*gapScale)
	}
	spA, sdA := fit(1, 2, 2)     // 2x slower, from the prior
	spB, sdB := fit(2, 2, 2)     // the same rank, from its true model
	spC, sdC := fit(1, 1, 1)     // at the prior's speed, same relative load
	spD, sdD := fit(1, 0.5, 0.5) // 2x faster, from the prior
	t.Logf("fitted (prefill, decode): 2x slower %.6f %.6f; from the truth 2x(%.6f %.6f); prior speed %.6f %.6f; 2x faster %.6f %.6f",
		spA, sdA, spB, sdB, spC, sdC, spD, sdD)
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got/want-1) > tol {
			t.Errorf("%s: %.4f, want %.4f within %.1f%%", what, got, want, 100*tol)
		}
	}
	near("2x slower from the prior vs from the truth, prefill", spA, 2*spB, 0.005)
	near("2x slower from the prior vs from the truth, decode", sdA, 2*sdB, 0.005)
	// Same queues in a time scaled by 2: the same relative scales.
	near("true model 2x in a 2x slower world vs the prior's, prefill", spB, spC, 1e-5)
	near("true model 2x in a 2x slower world vs the prior's, decode", sdB, sdC, 1e-5)
	near("2x faster, prefill", spD, spC/2, 0.005)
	near("2x faster, decode", sdD, sdC/2, 0.005)
	// The common factor stays small.
	near("prior speed, prefill", spC, 1, 0.1)
	near("prior speed, decode", sdC, 1, 0.25)
}

// runPassFit routes n requests (prompts of 256 to 2560 tokens, 8 output
// tokens, exponential gaps of mean gapMS) to one worker through a router
// priced with prior and the fit, runs them on a passEngine with model
// truth, feeds every finished request to the fit, and returns the fitted
// scales. One request decodes throughout, so every pass carries a decode
// share, as the router's decode term assumes of an active worker.
func runPassFit(t *testing.T, prior, truth selector.Timing, n int, gapMS float64) (sp, sd float64) {
	t.Helper()
	rc := router.DefaultConfig()
	rc.Selector.Timing = prior
	rng := rand.New(rand.NewPCG(7, 11))
	rt, err := router.New(rc, router.Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	const budget = 8192
	if err := rt.AddWorker(router.WorkerInfo{ID: 1, MaxNumBatchedTokens: budget, TotalKVBlocks: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	f := newTimingFits(prometheus.NewRegistry(), rt, prior)
	t0 := time.Unix(1000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	ctx := context.Background()
	const outs = 7
	e := &passEngine{model: truth, budget: budget, end: math.NaN()}
	route := func(id string, blocks, outputs int, now float64) {
		locals := make([]uint64, blocks)
		for i := range locals {
			locals[i] = rng.Uint64()
		}
		d, err := rt.Route(ctx, router.Request{ID: id, Locals: locals}, at(now))
		if err != nil {
			t.Fatal(err)
		}
		r := &simReq{id: id, left: blocks * rc.BlockSize, outputs: outputs}
		if outputs >= 0 {
			r.obs = f.begin(&d, at(now))
		}
		e.queue = append(e.queue, r)
		if math.IsNaN(e.end) {
			e.start(now)
		}
	}
	route("background", 4, -1, 0)
	next, routed, finished := rng.ExpFloat64()*gapMS, 0, 0
	for finished < n {
		if routed < n && (math.IsNaN(e.end) || next <= e.end) {
			route(strconv.Itoa(routed), 4+rng.IntN(37), outs, next)
			routed++
			next += rng.ExpFloat64() * gapMS
			continue
		}
		now := e.end
		for _, r := range e.dec {
			r.obs.token(at(now))
			if r.outputs > 0 {
				r.outputs--
			}
			if r.outputs == 0 {
				if err := rt.Free(r.id, at(now)); err != nil {
					t.Fatal(err)
				}
				f.observe(r.obs)
				finished++
			}
		}
		live := e.decoding[:0]
		for _, r := range e.decoding {
			if r.outputs != 0 {
				live = append(live, r)
			}
		}
		e.decoding = live
		for _, p := range e.batch {
			if p.r.left -= p.tok; p.r.left == 0 {
				p.r.obs.token(at(now))
				if err := rt.PrefillDone(p.r.id, at(now)); err != nil {
					t.Fatal(err)
				}
				e.queue = e.queue[1:] // FCFS: the finished one is the head
				if p.r.outputs != 0 {
					e.decoding = append(e.decoding, p.r)
					continue
				}
				if err := rt.Free(p.r.id, at(now)); err != nil {
					t.Fatal(err)
				}
				f.observe(p.r.obs)
				finished++
			}
		}
		e.start(now)
	}
	s := f.summary(1)
	if s == nil || s.TTFTObs < n*9/10 || s.ITLObs < n*9/10 {
		t.Fatalf("fit summary %+v after %d requests", s, n)
	}
	return s.PrefillScale, s.DecodeScale
}
