package frontend

import (
	"bytes"
	"encoding/json"
	"github.com/kvrouter/kvrouter/internal/decisionlog"
	"github.com/kvrouter/kvrouter/internal/frontend/pool"
	"log/slog"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// A flight is one proxied request's life from its routing decision to its
// free: it owns the request's booking in the router (PrefillDone at the
// first streamed event, Touch while it streams, Free or Fail exactly once)
// and what the frontend learns from it (time to first token, usage,
// timing-fit samples, the prediction check, the output length). The relay
// only copies bytes and tells it what it saw (flight.answered, data, body,
// fail, land); the flight decides what that means, so the tests drive it
// without HTTP (flight_test.go).
//
// A flight is used by the one goroutine that relays its answer.
type flight struct {
	id, endpoint, model string
	start               time.Time // the client request's arrival
	d                   *router.Decision
	fit                 *fitObs // nil: no timing-fit sample
	bk                  tracker
	ob                  flightObserver
	// dlog logs the decision when the flight ends (nil: no log).
	dlog *decisionlog.Writer

	status, outcome string // the client's status and the outcome label
	prefilled       bool   // PrefillDone sent
	done            bool   // Free or Fail sent
	// unread: the answer was not read through (Picked.Unparsed), so the
	// flight teaches nothing; noCheck: no prediction check (Pick).
	unread, noCheck bool
	lastTouch       time.Time

	tokens int // streamed output events counted
	// The engine's usage report: prompt and cached tokens (cached -1: none
	// reported) and completion tokens (exact, unlike counted events).
	reportedPrompt, reportedCached, reportedOutput int
	// epoch is the worker's removal epoch at the decision (regret.go).
	epoch uint64
	// cands is d.Candidates' buffer when the flight owns it (candbufs.go),
	// given back when the flight ends; nil none.
	cands *[]selector.Breakdown
	// dec holds d when the flight owns its decision (Server.place: one
	// allocation less per request than a separate Decision).
	dec router.Decision
	// l is the landing land reports (part of the flight: one allocation
	// less per request).
	l landing
}

// tracker is the router's load accounting of requests (*router.Router).
type tracker interface {
	PrefillDone(id string, now time.Time) error
	Touch(id string, now time.Time) error
	Free(id string, now time.Time) error
	Fail(id string, now time.Time) error
}

var _ tracker = (*router.Router)(nil)

// flightObserver records what flights learn (flightRecorder; tests fake it).
type flightObserver interface {
	// firstToken follows the PrefillDone of a streamed answer's first
	// event, ttft after the client request arrived.
	firstToken(ttft time.Duration)
	// usage is an engine's usage report, as read.
	usage(u usage)
	// landed follows the flight's Free.
	landed(l *landing)
}

// landing is what a finished flight reports.
type landing struct {
	id, endpoint, model string
	worker              uint64
	status, outcome     string
	elapsed             time.Duration // since the client request arrived
	// Only a flight whose outcome is "ok" teaches: fit is its timing-fit
	// sample (nil none), output its output length (0 none) and check the
	// prediction to compare with the engine's report (nil none).
	fit    *fitObs
	output int
	check  *predictionCheck
}

// predictionCheck is a routing prediction and the engine's report of the
// same request (checkPrediction).
type predictionCheck struct {
	overlapBlocks, isl     int
	reportedPrompt, cached int
	// The regret's part (regret.go): the blocks the router predicted on
	// the worker (router.Regret.Chosen) and its removal epoch then.
	chosen int
	epoch  uint64
}

// touchEvery is how long a streaming request goes without telling the
// router it is alive (router.Touch): the stale sweep frees requests that
// stop.
const touchEvery = time.Second

func newFlight(j *job, d *router.Decision, fit *fitObs, bk tracker, ob flightObserver) *flight {
	f := new(flight)
	f.init(j, d, fit, bk, ob)
	return f
}

// init starts f, a new flight, as newFlight does (f.dec may already hold
// d: it is left alone).
func (f *flight) init(j *job, d *router.Decision, fit *fitObs, bk tracker, ob flightObserver) {
	f.id, f.endpoint, f.model, f.start, f.d, f.fit = j.id, j.endpoint, j.model, j.start, d, fit
	f.bk, f.ob, f.outcome, f.reportedCached = bk, ob, "ok", -1
	if e, ok := ob.(interface{ removalEpoch(worker uint64) uint64 }); ok {
		f.epoch = e.removalEpoch(d.Worker.ID)
	}
}

// abort ends a flight whose request never reached its worker (Fail, once).
func (f *flight) abort(now time.Time) {
	if f.done {
		return
	}
	f.done = true
	_ = f.bk.Fail(f.id, now)
	f.dlog.Log(f.d, "unreached")
	f.recycle()
}

// recycle gives back the candidates buffer the flight owns: the decision
// is not read after the flight ends.
func (f *flight) recycle() {
	if f.cands != nil {
		putCands(f.cands, len(f.d.Candidates))
		f.cands = nil
	}
}

// answered: the worker's response headers arrived at now with status.
func (f *flight) answered(status int, now time.Time) {
	f.status = statusLabel(status)
	f.lastTouch = now
}

// fail sets the outcome ("ok" until then); the last one set is reported.
func (f *flight) fail(outcome string) { f.outcome = outcome }

// data: one streamed event's data (not "[DONE]") was relayed at now.
func (f *flight) data(now time.Time, data []byte) {
	f.chunk(now)
	f.event(now, data)
}

// chunk: answer bytes reached the client at now. The first marks the
// prefill done (the first token is out); later ones keep the booking
// fresh.
func (f *flight) chunk(now time.Time) {
	if f.done {
		return
	}
	if !f.prefilled {
		f.prefill(now)
		f.ob.firstToken(now.Sub(f.start))
	} else if now.Sub(f.lastTouch) > touchEvery {
		_ = f.bk.Touch(f.id, now)
		f.lastTouch = now
	}
}

// event reads one streamed event's data (not "[DONE]") seen at now: an
// output token, a usage report.
func (f *flight) event(now time.Time, data []byte) {
	if f.done {
		return
	}
	if isToken(data) {
		f.fit.token(now)
		f.tokens++
	}
	if bytes.Contains(data, []byte(`"usage":{`)) {
		f.usage(data)
	}
}

// body: a non-streamed answer was relayed at now; whole is its complete
// body (nil: too long to buffer, its usage is not read).
func (f *flight) body(now time.Time, whole []byte) {
	if f.done {
		return
	}
	f.prefill(now)
	if whole != nil {
		f.usage(whole)
	}
}

func (f *flight) prefill(now time.Time) {
	if f.prefilled {
		return
	}
	f.prefilled = true
	_ = f.bk.PrefillDone(f.id, now)
}

func (f *flight) usage(data []byte) {
	u, ok := parseUsage(data)
	if !ok {
		return
	}
	f.ob.usage(u)
	f.reportedPrompt, f.reportedCached, f.reportedOutput = u.prompt, u.cached, u.completion
}

// land ends the flight at now: Free, then its report. Only the first call
// (of land and abort) counts.
func (f *flight) land(now time.Time) {
	if f.done {
		return
	}
	f.done = true
	_ = f.bk.Free(f.id, now)
	f.dlog.Log(f.d, f.outcome)
	f.l = landing{id: f.id, endpoint: f.endpoint, model: f.model, worker: f.d.Worker.ID,
		status: f.status, outcome: f.outcome, elapsed: now.Sub(f.start)}
	l := &f.l
	if f.outcome == "ok" && !f.unread {
		l.fit = f.fit
		l.output = f.tokens
		if f.reportedOutput > 0 {
			l.output = f.reportedOutput
		}
		if f.reportedCached >= 0 && !f.noCheck {
			l.check = &predictionCheck{overlapBlocks: f.d.Overlap[kvevents.TierDevice], isl: f.d.ISL,
				reportedPrompt: f.reportedPrompt, cached: f.reportedCached,
				chosen: f.d.ChosenBlocks(), epoch: f.epoch}
		}
	}
	f.ob.landed(l)
	f.recycle()
}

// usage is what a worker reports of one request (OpenAI "usage").
type usage struct {
	prompt, cached, completion int
}

// parseUsage reads a worker's usage report (ok false: no usage in data).
func parseUsage(data []byte) (u usage, ok bool) {
	var c struct {
		Usage *struct {
			PromptTokens        int `json:"prompt_tokens"`
			CompletionTokens    int `json:"completion_tokens"`
			PromptTokensDetails *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if json.Unmarshal(data, &c) != nil || c.Usage == nil {
		return usage{}, false
	}
	u = usage{prompt: c.Usage.PromptTokens, completion: c.Usage.CompletionTokens}
	if c.Usage.PromptTokensDetails != nil {
		u.cached = c.Usage.PromptTokensDetails.CachedTokens
	}
	return u, true
}

// flightRecorder is the frontend's flightObserver: the online learning
// (timing fit, output-length averages, prediction checks) and the
// request metrics.
type flightRecorder struct {
	m      *metrics
	gm     *guardMetrics
	fits   *timingFits
	outAvg *router.OutputAverage
	kick   func()                         // lets queued requests try again
	onFree func(id string, worker uint64) // Events.OnFree; nil none
	// The prediction check (predict.go): the router's block size, the
	// engines' reported ones (the pool's polls), the per-worker tallies.
	blockSize int
	engines   engineBlockSizes
	preds     *predictionTracker
	// removals are the workers' removal epochs (regret.go).
	removals *removalEpochs
	log      *slog.Logger
}

func (r *flightRecorder) firstToken(ttft time.Duration) {
	r.kick()
	r.m.ttft.Observe(ttft.Seconds())
}

func (r *flightRecorder) usage(u usage) { r.m.countUsage(u) }

func (r *flightRecorder) landed(l *landing) {
	if l.outcome == "client_slow" {
		r.gm.slowClients.Inc()
	}
	r.kick()
	r.m.request(l.endpoint, l.status)
	r.m.outcomesBy.get(l.outcome).Inc()
	r.m.duration.Observe(l.elapsed.Seconds())
	r.fits.observe(l.fit)
	if l.output > 0 && r.outAvg != nil {
		r.outAvg.Observe(l.model, l.output)
	}
	if c := l.check; c != nil {
		r.checkPrediction(l.worker, c)
		if r.removals != nil {
			r.m.regret.answered(c.chosen, c.cached, r.blockSize, r.removals.epoch(l.worker) != c.epoch)
		}
	}
	if r.onFree != nil {
		r.onFree(l.id, l.worker)
	}
}

// engineBlockSizes is what the prediction check needs of the engines'
// polls (*pool.Pool).
type engineBlockSizes interface {
	// EngineBlockSize is the block size worker id's engine last reported
	// (0: none).
	EngineBlockSize(id uint64) int
}

var _ engineBlockSizes = (*pool.Pool)(nil)

// removalEpoch is worker's removal epoch now (newFlight keeps it).
func (r *flightRecorder) removalEpoch(worker uint64) uint64 {
	if r.removals == nil {
		return 0
	}
	return r.removals.epoch(worker)
}
