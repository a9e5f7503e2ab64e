package frontend

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Predicted vs reported prefix hits (DESIGN.md §5): per proxied request
// the router predicts the cached tokens on the chosen worker (its device
// overlap times the block size, capped at the prompt) and the engine reports
// what it actually found (usage.prompt_tokens_details.cached_tokens). Both
// are exported per worker, their difference as a histogram, each worker's
// accuracy appears in GET /debug/index, and a sustained gap logs one
// diagnosis naming the likely cause.

// predictMetrics are the prediction check's series.
type predictMetrics struct {
	predicted *prometheus.CounterVec // worker
	reported  *prometheus.CounterVec // worker
	gap       prometheus.Histogram
	diagnoses *prometheus.CounterVec // cause
}

func newPredictMetrics(reg *prometheus.Registry) *predictMetrics {
	m := &predictMetrics{
		predicted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_predicted_cached_tokens_total",
			Help: "Cached prompt tokens the router predicted (device overlap x block size), over requests whose engine reported usage."}, []string{"worker"}),
		reported: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_reported_cached_tokens_total",
			Help: "Cached prompt tokens the engines reported (usage.prompt_tokens_details.cached_tokens)."}, []string{"worker"}),
		gap: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kvrouter_cached_tokens_prediction_error",
			Help:    "Per request: predicted minus reported cached tokens (positive: the router expected hits the engine did not have).",
			Buckets: []float64{-4096, -1024, -256, -64, -16, -1, 0, 15, 63, 255, 1023, 4095}}),
		diagnoses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_prediction_diagnoses_total",
			Help: "Sustained prediction gaps diagnosed, by likely cause."}, []string{"cause"}),
	}
	reg.MustRegister(m.predicted, m.reported, m.gap, m.diagnoses)
	return m
}

// Diagnosis causes.
const (
	CauseBlockSize     = "block_size"
	CauseHashOrTokens  = "hash_seed_salt_or_tokenizer"
	CauseMissingEvents = "missing_events"
	CauseStaleIndex    = "missing_removals"
)

// gapWindow is how many reported requests per worker one diagnosis looks at.
const gapWindow = 16

// Prediction is one worker's predicted vs reported totals.
type Prediction struct {
	Requests  int `json:"requests"`
	Predicted int `json:"predicted_cached_tokens"`
	Reported  int `json:"reported_cached_tokens"`
	// Exact counts requests whose prediction was within one block of the
	// report; Accuracy = Exact / Requests.
	Exact    int     `json:"exact"`
	Accuracy float64 `json:"accuracy"`
	// Over and Under count requests predicted more (fewer) than one block
	// above (below) the report.
	Over  int `json:"over"`
	Under int `json:"under"`
	// Diagnosis is the cause logged for a sustained gap ("" = none).
	Diagnosis string `json:"diagnosis,omitempty"`
}

// predictionTracker keeps each worker's totals and its current window.
// Pure bookkeeping: the caller logs and counts what observe returns.
type predictionTracker struct {
	mu sync.Mutex
	w  map[uint64]*workerPrediction
	// stored marks workers with at least one applied Stored event: a
	// worker the router predicts nothing for although the engine hits is
	// unheard (no events) or hashed differently (events, no matches).
	// NB: a sync.Map, read without a lock: every applied Stored event
	// checks it, from the index writers' goroutines.
	stored sync.Map // uint64 -> struct{}
}

type workerPrediction struct {
	Prediction
	winN, winOver, winUnder int // current window
	winTokens               int // requests whose prompt length the engine counted differently
}

func newPredictionTracker() *predictionTracker {
	return &predictionTracker{w: map[uint64]*workerPrediction{}}
}

// sawStored records an applied Stored event of worker id.
func (t *predictionTracker) sawStored(id uint64) {
	if _, ok := t.stored.Load(id); !ok {
		t.stored.Store(id, struct{}{})
	}
}

// heardStores reports whether worker id had a Stored event applied.
func (t *predictionTracker) heardStores(id uint64) bool {
	_, ok := t.stored.Load(id)
	return ok
}

// observe records one request on worker id: predicted and reported cached
// tokens, the block size, whether the engine counted the prompt's tokens
// differently from the router (tokensDiffer) and whether it reported a
// block size other than the router's (engineBSMismatch). When a full
// window shows a sustained gap it returns the cause, once per worker and
// cause; a window without a gap clears the diagnosis so a new one can be
// reported.
func (t *predictionTracker) observe(id uint64, predicted, reported, blockSize int, tokensDiffer, engineBSMismatch bool) (cause string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.w[id]
	if p == nil {
		p = &workerPrediction{}
		t.w[id] = p
	}
	p.Requests++
	p.Predicted += predicted
	p.Reported += reported
	switch d := predicted - reported; {
	case d >= blockSize:
		p.Over++
		p.winOver++
	case d <= -blockSize:
		p.Under++
		p.winUnder++
	default:
		p.Exact++
	}
	p.Accuracy = float64(p.Exact) / float64(p.Requests)
	p.winN++
	if tokensDiffer {
		p.winTokens++
	}
	if p.winN < gapWindow {
		return ""
	}
	c := diagnose(p.winN, p.winOver, p.winUnder, p.winTokens, engineBSMismatch, t.heardStores(id))
	p.winN, p.winOver, p.winUnder, p.winTokens = 0, 0, 0, 0
	if c == p.Diagnosis {
		return ""
	}
	p.Diagnosis = c
	return c
}

// diagnose names the likely cause of a window's gap ("" = no sustained
// gap). A gap is sustained when at least half of the window's n requests
// missed by a block or more in the same direction (over: predicted more
// than reported; under: fewer). Prompts the engine counted at another
// length (tokens) mean a different tokenizer or chat template whichever
// way the gap goes: the router's own recent decisions (its predicted side
// index) can make it over-predict then.
func diagnose(n, over, under, tokens int, engineBSMismatch, heardStores bool) string {
	switch {
	case 2*over < n && 2*under < n:
		return ""
	case engineBSMismatch:
		return CauseBlockSize
	case 2*tokens >= n:
		return CauseHashOrTokens
	case 2*over >= n:
		// The index holds blocks the engine no longer has.
		return CauseStaleIndex
	case !heardStores:
		// The engine hits prefixes, and the router never heard of any.
		return CauseMissingEvents
	}
	// The engine's events arrive, yet the router's hashes of the same
	// prompts never find them: the two tokenize or salt differently.
	return CauseHashOrTokens
}

// snapshot returns worker id's totals (nil before its first report).
func (t *predictionTracker) snapshot(id uint64) *Prediction {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.w[id]
	if p == nil {
		return nil
	}
	c := p.Prediction
	return &c
}

// causeText is the diagnosis logged for a cause.
func causeText(cause string) string {
	switch cause {
	case CauseBlockSize:
		return "the engine's block size differs from the router's (--block-size): no block hash can match"
	case CauseHashOrTokens:
		return "the engine's hits do not follow the router's predictions although its KV events arrive: router and engine " +
			"tokenize or salt differently (prompt lengths that differ mean the tokenizer or chat template: use --tokenizer " +
			"remote or the engine's tokenizer.json; otherwise LoRA adapters (--lora-adapter) and cache_salt must match)"
	case CauseMissingEvents:
		return "the engine reports hits and the router has applied none of its KV events: they are not reaching the router " +
			"(check the ZMQ endpoint or --zmq-bind, the event topic and model, and kvrouter_events_rejected_total)"
	case CauseStaleIndex:
		return "the engine reports fewer hits than predicted: the index keeps blocks the engine evicted " +
			"(BlockRemoved events lost, or a publisher restart not seen)"
	}
	return cause
}

// checkPrediction compares a finished request's prediction with the
// engine's report (its prompt and cached tokens).
func (r *flightRecorder) checkPrediction(worker uint64, c *predictionCheck) {
	bs := r.blockSize
	predicted := min(c.overlapBlocks*bs, c.isl)
	w := strconv.FormatUint(worker, 10)
	r.m.predict.predicted.WithLabelValues(w).Add(float64(predicted))
	r.m.predict.reported.WithLabelValues(w).Add(float64(c.cached))
	r.m.predict.gap.Observe(float64(predicted - c.cached))
	ebs := r.engines.EngineBlockSize(worker)
	mismatch := ebs != 0 && ebs != bs
	// An engine that counts a prompt at another length tokenized it
	// differently; a few tokens of difference are a template's or
	// special tokens' and change no full block.
	tokensDiffer := c.reportedPrompt > 0 && (c.reportedPrompt/bs != c.isl/bs)
	if cause := r.preds.observe(worker, predicted, c.cached, bs, tokensDiffer, mismatch); cause != "" {
		p := r.preds.snapshot(worker)
		r.m.predict.diagnoses.WithLabelValues(cause).Inc()
		r.log.Warn("prefix-hit prediction gap: "+causeText(cause), "worker", worker, "cause", cause,
			"requests", p.Requests, "predicted_cached_tokens", p.Predicted, "reported_cached_tokens", p.Reported,
			"accuracy", p.Accuracy)
	}
}
