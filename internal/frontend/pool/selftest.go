package pool

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/internal/tokenizer/remote"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// Tokenizer self-test (DESIGN.md §5): before the router forwards token
// ids to a worker it checks that the worker's engine tokenizes exactly as
// the router does. A few canary prompts are tokenized by the router and by
// the engine's POST /tokenize (vLLM's API; SGLang and llm-d-inference-sim
// serve the same completion shape, vLLM also the chat one) and compared.
// It runs when the poller first reaches a worker, again when the worker
// comes back after being down or its engine restarted (a new
// process_start_time_seconds), and after a passing failure with backoff.

// Self-test outcomes: kvrouter_tokenizer_selftest_total{worker,outcome}
// and the "tokenizer" line of GET /debug/index.
const (
	// SelfTestMatch: every canary the engine tokenizes gave the router's ids.
	SelfTestMatch = "match"
	// SelfTestMismatch: a canary's ids differ (SelfTest.Position is the
	// first differing token). Ids are never forwarded to the worker.
	SelfTestMismatch = "mismatch"
	// SelfTestUnavailable: the engine serves no /tokenize for this model
	// (404, 405, 501 or another 4xx). Ids are never forwarded to it.
	SelfTestUnavailable = "unavailable"
	// SelfTestError: a passing failure (connection, timeout, 5xx, 429);
	// tried again after a backoff.
	SelfTestError = "error"
)

// selfTestTimeout bounds one self-test (all canaries); selfTestMaxBackoff
// caps the wait before another attempt after SelfTestError.
const (
	selfTestTimeout    = 10 * time.Second
	selfTestMaxBackoff = 30 * time.Second
)

// canary is one self-test prompt: a completion prompt, or a chat rendered
// with the model's template (and the generation prompt).
type canary struct {
	name   string
	prompt string
	chat   []tokenizer.Message
}

// canaries cover plain ASCII text, the chat template, and non-ASCII text
// (multi-byte UTF-8, CJK, an emoji with a variation selector).
var canaries = []canary{
	{name: "text", prompt: "The quick brown fox jumps over the lazy dog; KV-cache-aware routing, 1234567890!"},
	{name: "chat", chat: []tokenizer.Message{
		{Role: "system", Content: "You are a helpful assistant."},
		{Role: "user", Content: "What is 17 * 23? Answer briefly."},
	}},
	{name: "non_ascii", prompt: "Grüße aus Köln: naïve café — 東京の天気は晴れです 🌤️ Привет, мир!"},
}

func (c canary) encode(ctx context.Context, t tokenizer.Tokenizer) ([]uint32, error) {
	if c.chat != nil {
		return t.EncodeChat(ctx, c.chat, true)
	}
	return t.Encode(ctx, c.prompt)
}

// SelfTest is a worker's tokenizer self-test result.
type SelfTest struct {
	// Outcome is SelfTestMatch, SelfTestMismatch, SelfTestUnavailable or
	// SelfTestError; "pending" before the first result.
	Outcome string `json:"outcome"`
	// Canaries is how many canaries were compared.
	Canaries int `json:"canaries,omitempty"`
	// Mismatch locates a SelfTestMismatch.
	Mismatch *Mismatch `json:"mismatch,omitempty"`
	// Skipped are canaries not compared, with why (an engine whose
	// /tokenize takes no chat messages, a model without a chat template).
	Skipped []string `json:"skipped,omitempty"`
	// Detail is the error of SelfTestUnavailable or SelfTestError.
	Detail string `json:"detail,omitempty"`
	// ForwardIDs says whether completion text prompts go to this worker
	// as token ids (Config.ForwardTokens, Config.OwnTokenizer and a match).
	ForwardIDs bool `json:"forward_ids"`
}

// Mismatch is where the engine's ids first differ from the router's.
type Mismatch struct {
	Canary string `json:"canary"`
	// Position is the first differing token's index.
	Position int `json:"position"`
	// RouterToken and EngineToken are the ids there (-1: past the end of
	// the shorter list).
	RouterToken int64 `json:"router_token"`
	EngineToken int64 `json:"engine_token"`
}

// selfTestPending is the Outcome shown before the first result.
const selfTestPending = "pending"

// tokState is a worker's self-test bookkeeping in workerHealth.
type tokState struct {
	res     SelfTest // Outcome "" = not run since the last reset
	gen     uint64   // bumped by reset; a result of an older run is dropped
	busy    bool
	backoff time.Duration
	retryAt time.Time
	start   float64 // the engine's process_start_time_seconds; 0 = unknown
}

func (t *tokState) reset() {
	t.res, t.backoff, t.retryAt = SelfTest{}, 0, time.Time{}
	t.gen++
}

// firstDiff is the first position where a and b differ, -1 when equal.
func firstDiff(a, b []uint32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

func tokenAt(ids []uint32, i int) int64 {
	if i < len(ids) {
		return int64(ids[i])
	}
	return -1
}

// selfTest compares the router's tokenizer with w's engine on every canary.
func (p *Pool) selfTest(ctx context.Context, w *Worker) SelfTest {
	eng, err := remote.New(remote.Config{Endpoints: []string{w.URL}, Model: p.cfg.Model, Client: p.client})
	if err != nil {
		return SelfTest{Outcome: SelfTestError, Detail: err.Error()}
	}
	var res SelfTest
	for _, c := range canaries {
		want, err := c.encode(ctx, p.cfg.Tokenizer)
		if err != nil {
			if ctx.Err() != nil {
				return SelfTest{Outcome: SelfTestError, Detail: err.Error()}
			}
			res.Skipped = append(res.Skipped, c.name+": router: "+err.Error())
			continue
		}
		got, err := c.encode(ctx, eng)
		if err != nil {
			var se *remote.StatusError
			switch {
			case errors.As(err, &se) && se.NotServed() && c.chat != nil:
				// SGLang's /tokenize takes a prompt only.
				res.Skipped = append(res.Skipped, c.name+": engine: "+err.Error())
				continue
			case errors.As(err, &se) && se.NotServed():
				return SelfTest{Outcome: SelfTestUnavailable, Detail: err.Error()}
			}
			return SelfTest{Outcome: SelfTestError, Detail: err.Error()}
		}
		res.Canaries++
		if pos := firstDiff(want, got); pos >= 0 {
			res.Outcome = SelfTestMismatch
			res.Mismatch = &Mismatch{Canary: c.name, Position: pos, RouterToken: tokenAt(want, pos), EngineToken: tokenAt(got, pos)}
			return res
		}
	}
	if res.Canaries == 0 {
		return SelfTest{Outcome: SelfTestUnavailable, Skipped: res.Skipped, Detail: "no canary could be compared"}
	}
	res.Outcome = SelfTestMatch
	return res
}

// ForwardIDs reports whether completion text prompts go to worker id as
// the router's token ids: ForwardTokens is on, the tokenizer is the
// model's own, and the worker's self-test matched.
func (p *Pool) ForwardIDs(id uint64) bool {
	if !p.cfg.ForwardTokens || !p.cfg.OwnTokenizer {
		return false
	}
	p.eng.mu.Lock()
	defer p.eng.mu.Unlock()
	h := p.eng.w[id]
	return h != nil && h.tok.res.Outcome == SelfTestMatch
}

// selfTestDue claims w's self-test when one is due at now: never run since
// the last reset, or a SelfTestError whose backoff has passed. The worker
// must be in routing and its last poll answered.
func (p *Pool) selfTestDue(w *Worker, now time.Time) (gen uint64, due bool) {
	if w.down {
		return 0, false
	}
	p.eng.mu.Lock()
	defer p.eng.mu.Unlock()
	h := p.eng.w[w.ID]
	if h == nil || h.tok.busy || h.fails > 0 || h.refused != "" {
		return 0, false
	}
	switch h.tok.res.Outcome {
	case "":
	case SelfTestError:
		if now.Before(h.tok.retryAt) {
			return 0, false
		}
	default:
		return 0, false
	}
	h.tok.busy = true
	return h.tok.gen, true
}

// runSelfTest runs w's self-test (claimed with selfTestDue at gen), records
// the result, counts it and logs it once.
func (p *Pool) runSelfTest(ctx context.Context, w *Worker, gen uint64) SelfTest {
	tctx, cancel := context.WithTimeout(ctx, selfTestTimeout)
	res := p.selfTest(tctx, w)
	cancel()
	p.eng.mu.Lock()
	h := p.eng.w[w.ID]
	stale := h == nil || h.tok.gen != gen || ctx.Err() != nil
	if h != nil && h.tok.gen == gen {
		h.tok.busy = false
	}
	if !stale {
		if res.Outcome == SelfTestError {
			h.tok.backoff = min(max(2*h.tok.backoff, time.Second), selfTestMaxBackoff)
			h.tok.retryAt = time.Now().Add(h.tok.backoff)
		}
		h.tok.res = res
	}
	p.eng.mu.Unlock()
	if stale { // removed, reset meanwhile, or shutting down: not an outcome
		return res
	}
	res.ForwardIDs = p.ForwardIDs(w.ID)
	p.m.selfTests.WithLabelValues(strconv.FormatUint(w.ID, 10), res.Outcome).Inc()
	lg := p.log.With("worker", w.ID, "url", w.URL, "model", p.cfg.Model, "tokenizer", p.cfg.Tokenizer.Name())
	switch res.Outcome {
	case SelfTestMatch:
		lg.Info("tokenizer self-test passed", "canaries", res.Canaries, "skipped", len(res.Skipped), "forward_ids", res.ForwardIDs)
	case SelfTestMismatch:
		lg.Error("tokenizer self-test mismatch: the engine tokenizes differently from the router; token ids are not forwarded to it",
			"canary", res.Mismatch.Canary, "position", res.Mismatch.Position,
			"router_token", res.Mismatch.RouterToken, "engine_token", res.Mismatch.EngineToken)
	case SelfTestUnavailable:
		lg.Warn("tokenizer self-test unavailable: the engine has no usable /tokenize; token ids are not forwarded to it", "err", res.Detail)
	default:
		lg.Warn("tokenizer self-test failed; will retry", "err", res.Detail)
	}
	return res
}

// RunSelfTest runs worker id's self-test at once, as Run does after a
// poll round, and returns its result; ok is false when id is unknown or
// no self-test is due (down, refused, failing its polls, running, or
// done). A worker not polled yet counts as answering. For callers that
// drive the pool themselves (tests); Run needs no help.
func (p *Pool) RunSelfTest(ctx context.Context, id uint64, now time.Time) (res SelfTest, ok bool) {
	p.mu.RLock()
	wp, found := p.workers[id]
	var w Worker
	if found {
		w = *wp
	}
	p.mu.RUnlock()
	if !found {
		return SelfTest{}, false
	}
	p.eng.mu.Lock()
	p.eng.get(id)
	p.eng.mu.Unlock()
	gen, due := p.selfTestDue(&w, now)
	if !due {
		return SelfTest{}, false
	}
	return p.runSelfTest(ctx, &w, gen), true
}

// selfTests starts the due self-tests of ws on their own goroutines
// (tracked by wg), so a slow /tokenize never holds up load polling.
func (p *Pool) selfTests(ctx context.Context, ws []Worker, now time.Time, wg *sync.WaitGroup) {
	for i := range ws {
		w := &ws[i]
		gen, due := p.selfTestDue(w, now)
		if !due {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); p.runSelfTest(ctx, w, gen) }()
	}
}

// resetSelfTest makes id's self-test due again (the worker came back or
// its engine restarted); its ids stop being forwarded until it passes.
func (p *Pool) resetSelfTest(id uint64) {
	p.eng.mu.Lock()
	if h := p.eng.w[id]; h != nil {
		h.tok.reset()
	}
	p.eng.mu.Unlock()
}

// noteEngineStart resets id's self-test when the engine's process start
// time changed (a restart the poller did not see as down).
func (p *Pool) noteEngineStart(w *Worker, start float64) {
	if start == 0 {
		return
	}
	p.eng.mu.Lock()
	h := p.eng.get(w.ID)
	restarted := h.tok.start != 0 && h.tok.start != start
	h.tok.start = start
	if restarted {
		h.tok.reset()
	}
	p.eng.mu.Unlock()
	if restarted {
		p.log.Info("engine restarted: tokenizer self-test again", "worker", w.ID, "url", w.URL)
	}
}

// SelfTest is id's self-test for GET /debug/index.
func (p *Pool) SelfTest(id uint64) SelfTest {
	p.eng.mu.Lock()
	var res SelfTest
	if h := p.eng.w[id]; h != nil {
		res = h.tok.res
	}
	p.eng.mu.Unlock()
	if res.Outcome == "" {
		res.Outcome = selfTestPending
	}
	res.ForwardIDs = p.ForwardIDs(id)
	return res
}
