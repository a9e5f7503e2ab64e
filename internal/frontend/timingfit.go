package frontend

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
	"github.com/prometheus/client_golang/prometheus"
)

// maxGaps bounds the inter-token gaps one request keeps for its ITL
// observation (the first ones after its first token).
const maxGaps = 256

// minGaps is the fewest gaps a request needs to report an ITL: the median
// of fewer says little.
const minGaps = 4

// timingFits feeds one selector.TimingFit per worker from the latencies
// the proxy sees (time to first token from dispatch, gaps between
// streamed tokens) and hands the fitted model to the router
// (router.SetWorkerTiming), so the time cost prices each worker at its own
// speed (DESIGN.md §6's polynomials are the prior). nil when off.
type timingFits struct {
	rt    *router.Router
	prior selector.Timing
	scale *prometheus.GaugeVec // worker, part

	mu   sync.Mutex
	fits map[uint64]*workerFit
}

type workerFit struct {
	fit *selector.TimingFit
	// sp and sd are the scales of the model last handed to the router:
	// the breakdowns of its decisions are the prior's times these.
	sp, sd    float64
	ttft, itl int // observations taken
}

func newTimingFits(reg *prometheus.Registry, rt *router.Router, prior selector.Timing) *timingFits {
	f := &timingFits{rt: rt, prior: prior, fits: map[uint64]*workerFit{},
		scale: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kvrouter_worker_timing_scale",
			Help: "Fitted timing model of a worker relative to the prior (DESIGN.md §6 polynomials): part prefill or decode; 1 = the prior."},
			[]string{"worker", "part"})}
	reg.MustRegister(f.scale)
	return f
}

// fitObs is one dispatched request's prediction under the prior and what
// the proxy observed of it.
type fitObs struct {
	worker              uint64
	prefillMS, decodeMS float64 // predicted TTFT parts under the prior
	usage               float64 // KV usage at dispatch, its own blocks included
	dispatched          time.Time
	first, last         time.Time
	gaps                []float64 // ms between streamed tokens after the first
}

// priorPrediction returns what the router predicted for the chosen
// candidate of d under the prior, given the scales (sp, sd) of the model
// it priced that worker with: the time cost is linear in the polynomial
// coefficients, so its prefill and decode terms divided by the scales
// are the prior's. Under the pass model (selector Config.PassModel) the
// time left of the pass in flight subtracts real elapsed time, so the
// prefill term is only nearly so; the fit multiplies it back by its
// scale, so it weighs each observation against the decision's own
// prediction and settles where those are unbiased, wherever it starts
// (TestTimingFitUnderPassModel). ok is false when the decision carries no
// time-cost breakdown of the chosen worker.
func priorPrediction(d *router.Decision, sp, sd float64) (prefillMS, decodeMS, usage float64, ok bool) {
	for i := range d.Candidates {
		b := &d.Candidates[i]
		if b.Worker != d.Worker || b.Out != selector.ReasonNone {
			continue
		}
		if !(b.Prefill > 0) || !(sp > 0) || !(sd > 0) {
			return 0, 0, 0, false
		}
		return b.Prefill / sp, max(b.Decode, 0) / sd, b.Usage, true
	}
	return 0, 0, 0, false
}

// begin records d's prediction at dispatch; nil (no observation) when
// the fit is off or d has no usable breakdown.
func (f *timingFits) begin(d *router.Decision, now time.Time) *fitObs {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	sp, sd := 1.0, 1.0
	if w := f.fits[d.Worker.ID]; w != nil {
		sp, sd = w.sp, w.sd
	}
	f.mu.Unlock()
	p, dec, u, ok := priorPrediction(d, sp, sd)
	if !ok {
		return nil
	}
	return &fitObs{worker: d.Worker.ID, prefillMS: p, decodeMS: dec, usage: u, dispatched: now}
}

// token records a streamed token at now.
func (o *fitObs) token(now time.Time) {
	if o == nil {
		return
	}
	if o.first.IsZero() {
		o.first, o.last = now, now
		return
	}
	if len(o.gaps) < maxGaps {
		o.gaps = append(o.gaps, float64(now.Sub(o.last))/float64(time.Millisecond))
	}
	o.last = now
}

// medianGap is the request's inter-token latency: the median of its gaps,
// so the passes it shared with other requests' prefill chunks and the
// tokens a network flush delivered together (gap ~0, then double) do not
// count as decode time. ok is false with fewer than minGaps gaps.
func (o *fitObs) medianGap() (float64, bool) {
	if len(o.gaps) < minGaps {
		return 0, false
	}
	g := slices.Clone(o.gaps)
	slices.Sort(g)
	n := len(g)
	if n%2 == 1 {
		return g[n/2], true
	}
	return (g[n/2-1] + g[n/2]) / 2, true
}

// observe feeds a completed request's observations to its worker's fit
// and hands the refitted model to the router. The fit's clipped,
// prior-weighted steps (selector.TimingFit) keep a stall or queueing the
// router did not book from moving it far.
func (f *timingFits) observe(o *fitObs) {
	if f == nil || o == nil || o.first.IsZero() {
		return
	}
	ttft := float64(o.first.Sub(o.dispatched)) / float64(time.Millisecond)
	itl, hasITL := o.medianGap()
	f.mu.Lock()
	w := f.fits[o.worker]
	if w == nil {
		w = &workerFit{fit: selector.NewTimingFit(f.prior, selector.FitConfig{}), sp: 1, sd: 1}
		f.fits[o.worker] = w
	}
	if hasITL && w.fit.ObserveITL(itl, o.usage) == nil {
		w.itl++
	}
	if w.fit.ObserveTTFT(ttft, o.prefillMS, o.decodeMS) == nil {
		w.ttft++
	}
	t := w.fit.Timing()
	sp, sd := w.fit.Scales()
	// Handed over under f.mu, so the scales begin reads are those of the
	// model the router holds (up to a decision taken in between).
	err := f.rt.SetWorkerTiming(o.worker, t)
	if err == nil {
		w.sp, w.sd = sp, sd
	}
	f.mu.Unlock()
	if err == nil {
		id := strconv.FormatUint(o.worker, 10)
		f.scale.WithLabelValues(id, "prefill").Set(sp)
		f.scale.WithLabelValues(id, "decode").Set(sd)
	}
}

// TimingSummary is a worker's fitted timing model in GET /debug/index.
type TimingSummary struct {
	// PrefillScale and DecodeScale multiply the prior's polynomials
	// (1 = the prior).
	PrefillScale float64 `json:"prefill_scale"`
	DecodeScale  float64 `json:"decode_scale"`
	TTFTObs      int     `json:"ttft_observations"`
	ITLObs       int     `json:"itl_observations"`
}

// summary returns worker id's fitted model, or nil before its first
// observation (or with the fit off).
func (f *timingFits) summary(id uint64) *TimingSummary {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.fits[id]
	if w == nil {
		return nil
	}
	sp, sd := w.fit.Scales()
	return &TimingSummary{PrefillScale: sp, DecodeScale: sd, TTFTObs: w.ttft, ITLObs: w.itl}
}

// TimingFit returns worker id's fitted timing model (GET /debug/index
// shows it too) and whether it has one.
func (s *Server) TimingFit(id uint64) (TimingSummary, bool) {
	if x := s.fits.summary(id); x != nil {
		return *x, true
	}
	return TimingSummary{}, false
}
