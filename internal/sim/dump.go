package sim

import (
	"bufio"
	"encoding/json"
	"io"
	"time"

	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// RequestRow is one completed request as a policy routed and the engine
// served it (Config.KeepRequests): the router's prediction beside what
// happened, to tell which term of the cost misled a decision. Predicted
// figures are those of the chosen candidate's selector.Breakdown; they are
// zero for policies that do not score (cache-aware), for requests the
// router's wait queue released later and for disaggregated variants (whose
// two hops this row does not split).
type RequestRow struct {
	Policy    string  `json:"policy"`
	ID        int     `json:"id"`
	ArrivalMS float64 `json:"arrival_ms"`
	ISLBlocks int     `json:"isl_blocks"`
	Worker    int     `json:"worker"`
	// PredCachedBlocks is the prefix the router credited (its CachedTokens
	// in blocks); CachedBlocks what the engine found at admission.
	PredCachedBlocks int `json:"pred_cached_blocks"`
	CachedBlocks     int `json:"cached_blocks"`
	// TTFTMS is the request's TTFT (the report's sample); PredTTFTMS the
	// router's estimate of it, PrefillMS + DecodeMS.
	TTFTMS     float64 `json:"ttft_ms"`
	PredTTFTMS float64 `json:"pred_ttft_ms"`
	// The chosen candidate's breakdown (selector.Breakdown): the pass in
	// flight left (ms) and the prefill tokens pending behind it, the queue
	// (pending + own tokens), the prefill and decode time terms, the
	// imposed term, its passes and its cost.
	InFlightMS    float64 `json:"inflight_ms"`
	WaitingTokens float64 `json:"waiting_tokens"`
	QueueTokens   float64 `json:"queue_tokens"`
	PrefillMS     float64 `json:"prefill_ms"`
	DecodeMS      float64 `json:"decode_ms"`
	ImposedMS     float64 `json:"imposed_ms"`
	Passes        int     `json:"passes"`
	Cost          float64 `json:"cost"`
	// The chosen engine when the request reached it: waiting and running
	// requests, prefill tokens not yet computed (its own excluded), and
	// the time left of its pass in flight (0: idle).
	EngineWaiting       int     `json:"engine_waiting"`
	EngineRunning       int     `json:"engine_running"`
	EnginePrefillTokens int     `json:"engine_prefill_tokens"`
	EnginePassLeftMS    float64 `json:"engine_pass_left_ms"`
	// The pass that produced the first token: how long after arrival it
	// started, its prefill tokens (the request's own and those batched
	// with it), decoding requests and duration.
	FirstPassWaitMS  float64 `json:"first_pass_wait_ms"`
	FirstPassTokens  int     `json:"first_pass_tokens"`
	FirstPassDecodes int     `json:"first_pass_decodes"`
	FirstPassMS      float64 `json:"first_pass_ms"`
	// Candidates holds every worker's cost and device overlap, by worker
	// (empty when the policy does not score).
	Candidates []CandidateRow `json:"candidates,omitempty"`
}

// CandidateRow is one scored worker of a decision.
type CandidateRow struct {
	Worker  int     `json:"worker"`
	Overlap int     `json:"overlap"`
	Cost    float64 `json:"cost"`
	Pred    float64 `json:"pred_ttft_ms"`
}

// WriteRequests writes rows as JSON lines, each prefixed by the run's
// labels (trace, load fraction, seed) in extra.
func WriteRequests(w io.Writer, extra map[string]any, rows []RequestRow) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range rows {
		if extra == nil {
			if err := enc.Encode(&rows[i]); err != nil {
				return err
			}
			continue
		}
		if err := enc.Encode(struct {
			Run map[string]any `json:"run"`
			*RequestRow
		}{extra, &rows[i]}); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// explainer is a policy that keeps its last decision (routerPolicy with
// Config.KeepRequests).
type explainer interface {
	lastDecision() *router.Decision
}

// noteRoute records request i's predicted figures from the policy's last
// decision.
func (f *fleet) noteRoute(i int) {
	ex, ok := f.pol.(explainer)
	if !ok {
		return
	}
	d := ex.lastDecision()
	row := &f.rows[i]
	B := f.cfg.BlockSize
	row.PredCachedBlocks = d.CachedTokens / B
	row.Candidates = make([]CandidateRow, 0, len(d.Candidates))
	for k := range d.Candidates {
		c := &d.Candidates[k]
		if c.Out != selector.ReasonNone {
			continue
		}
		row.Candidates = append(row.Candidates, CandidateRow{Worker: int(c.Worker.ID), Overlap: c.Overlap[0], Cost: c.Cost, Pred: c.Prefill + c.Decode})
		if c.Worker != d.Worker {
			continue
		}
		row.PredTTFTMS = c.Prefill + c.Decode
		row.InFlightMS, row.WaitingTokens, row.QueueTokens = c.InFlight, c.Waiting, c.Queue
		row.PrefillMS, row.DecodeMS, row.ImposedMS = c.Prefill, c.Decode, c.Imposed
		row.Passes, row.Cost = c.Passes, c.Cost
	}
}

// noteDispatch records request i's worker and that engine's state as the
// request reaches it.
func (f *fleet) noteDispatch(i, w int) {
	row := &f.rows[i]
	r := &f.p.reqs[i]
	wk := &f.ws[w]
	st := wk.eng.Stats()
	row.ID = i
	row.ArrivalMS = toMS(r.arrival)
	row.ISLBlocks = len(r.locals)
	row.Worker = w
	row.EngineWaiting, row.EngineRunning, row.EnginePrefillTokens = st.Waiting, st.Running, st.ActivePrefillTokens
	if wk.inPass {
		row.EnginePassLeftMS = toMS(max(0, wk.res.End()-f.now))
	}
}

// noteFirst records the pass that produced request i's first token.
func (f *fleet) noteFirst(i int, res *mocker.StepResult) {
	row := &f.rows[i]
	row.FirstPassWaitMS = toMS(res.Start - f.p.reqs[i].arrival)
	row.FirstPassTokens, row.FirstPassDecodes = res.PrefillTokens, res.Decodes
	row.FirstPassMS = toMS(res.Duration)
}

// noteRecord completes request i's row with what the engine did and
// appends it, in completion order (that of PolicyReport.TTFTSamples).
func (f *fleet) noteRecord(i int, ttft time.Duration, cached int) {
	row := f.rows[i]
	row.Policy = string(f.rep.Policy)
	row.TTFTMS = toMS(ttft)
	row.CachedBlocks = cached / f.cfg.BlockSize
	f.rep.RequestRows = append(f.rep.RequestRows, row)
	f.rows[i] = RequestRow{}
}
