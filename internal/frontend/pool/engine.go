package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Engine telemetry (DESIGN.md §4 busy thresholds): the router reads each
// worker's load from the Prometheus /metrics every engine serves (vLLM,
// SGLang, llm-d-inference-sim, the kvrouter mocker) and its liveness from
// GET /health, so no kvrouter-specific endpoint is needed.
//
// Metric names read, the first present wins:
//
//	KV usage (0..1)   vllm:kv_cache_usage_perc, vllm:gpu_cache_usage_perc, sglang:token_usage
//	running requests  vllm:num_requests_running, sglang:num_running_reqs
//	waiting requests  vllm:num_requests_waiting, sglang:num_queue_reqs
//	prefill tokens    kvrouter_mocker_active_prefill_tokens (the mocker only)
//	cache config      vllm:cache_config_info{block_size, num_gpu_blocks}
//
// The dp rank of a sample is its "engine" label (vLLM: one engine index
// per data-parallel rank) or "dp_rank" label (SGLang), else 0.
//
// Engine metrics are optional per worker: a worker whose /metrics is
// missing (404) or names none of these (any other OpenAI-compatible
// server) is polled at /health, else /v1/models, for liveness instead,
// and its load is what the router booked for it; the worker option
// metrics=off skips /metrics altogether.
var (
	kvUsageNames  = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"}
	runningNames  = []string{"vllm:num_requests_running", "sglang:num_running_reqs"}
	waitingNames  = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs"}
	prefillNames  = []string{"kvrouter_mocker_active_prefill_tokens"}
	cacheInfoName = "vllm:cache_config_info"
	startTimeName = "process_start_time_seconds"
)

// errNoEngineMetrics: the worker has no /metrics, or one without any
// metric the router reads. Not a failure: its health comes from
// probeHealth.
var errNoEngineMetrics = errors.New("no vLLM or SGLang load metric")

// Down-worker handling.
const (
	// PollFailuresDown consecutive failed /metrics polls take a worker out
	// of routing (one transient error does not).
	PollFailuresDown = 3
	// probeMaxBackoff caps the interval between /health probes of a down
	// worker; probes start at the poll interval and double.
	probeMaxBackoff = 5 * time.Second
	// modelsRefresh is how often a worker's /v1/models is read for LoRA
	// adapters loaded at run time.
	modelsRefresh = 10 * time.Second
)

// rankLoad is one dp rank's load as an engine reports it.
type rankLoad struct {
	KVUsage          float64
	HasKV            bool
	Running, Waiting float64
	PrefillTokens    float64
}

// engineReport is what one scrape of a worker's /metrics says.
type engineReport struct {
	Ranks map[uint32]*rankLoad
	// BlockSize and GPUBlocks come from vllm:cache_config_info; 0 = not
	// reported.
	BlockSize, GPUBlocks int
	// Known counts the samples of known metrics: 0 means the page has
	// none of them (not an engine kvrouter understands).
	Known int
	// StartTime is process_start_time_seconds (the Prometheus client
	// libraries' process collector: vLLM, SGLang); 0 = not reported. A
	// change means the engine restarted (its tokenizer self-test is run
	// again).
	StartTime float64
	// SGLang: the page has SGLang's gauges (its budget is at
	// /get_server_info, budget.go).
	SGLang bool
}

// parseEngineMetrics parses a Prometheus text exposition with the
// Prometheus text parser and extracts what the router uses.
func parseEngineMetrics(r io.Reader) (engineReport, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return engineReport{}, fmt.Errorf("frontend: engine metrics: %w", err)
	}
	rep := engineReport{Ranks: map[uint32]*rankLoad{}}
	rank := func(m *dto.Metric) *rankLoad {
		var rk uint64
		for _, lp := range m.GetLabel() {
			if n := lp.GetName(); n == "engine" || n == "dp_rank" {
				if v, err := strconv.ParseUint(lp.GetValue(), 10, 32); err == nil {
					rk = v
				}
			}
		}
		x := rep.Ranks[uint32(rk)]
		if x == nil {
			x = &rankLoad{}
			rep.Ranks[uint32(rk)] = x
		}
		return x
	}
	// first finds the first family of names present and calls set for
	// each of its samples.
	first := func(names []string, set func(x *rankLoad, v float64)) {
		for _, n := range names {
			f, ok := fams[n]
			if !ok || len(f.GetMetric()) == 0 {
				continue
			}
			for _, m := range f.GetMetric() {
				set(rank(m), sampleValue(m))
				rep.Known++
			}
			return
		}
	}
	first(kvUsageNames, func(x *rankLoad, v float64) {
		if !math.IsNaN(v) { // NaN is no reading (min and max would keep it)
			x.KVUsage, x.HasKV = min(max(v, 0), 1), true
		}
	})
	first(runningNames, func(x *rankLoad, v float64) { x.Running = v })
	first(waitingNames, func(x *rankLoad, v float64) { x.Waiting = v })
	first(prefillNames, func(x *rankLoad, v float64) { x.PrefillTokens = v })
	if f, ok := fams[startTimeName]; ok && len(f.GetMetric()) > 0 {
		rep.StartTime = sampleValue(f.GetMetric()[0])
	}
	for n := range fams {
		if strings.HasPrefix(n, "sglang:") {
			rep.SGLang = true
			break
		}
	}
	if f, ok := fams[cacheInfoName]; ok {
		for _, m := range f.GetMetric() {
			rep.Known++
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "block_size":
					rep.BlockSize, _ = strconv.Atoi(lp.GetValue())
				case "num_gpu_blocks":
					rep.GPUBlocks, _ = strconv.Atoi(lp.GetValue())
				}
			}
		}
	}
	return rep, nil
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// engineState is the frontend's per-worker health bookkeeping.
type engineState struct {
	mu sync.Mutex
	w  map[uint64]*workerHealth
}

type workerHealth struct {
	fails   int           // consecutive failed polls
	backoff time.Duration // current probe interval while down
	probeAt time.Time     // next probe while down
	// refused is why the worker is kept out of routing although it
	// answers ("block_size"); "" = not refused.
	refused string
	// engineBS, engineBlocks: what the engine last reported (0 = never).
	engineBS, engineBlocks int
	// noMetrics: the last poll found no engine metrics (or the worker is
	// metrics=off); health came from /health or /v1/models.
	noMetrics    bool
	budgetAsked  bool // the engine was asked its budget (budget.go)
	warnedBlocks bool
	modelsAt     time.Time // next GET /v1/models (adapters.go)
	tok          tokState  // tokenizer self-test (selftest.go)
}

func (e *engineState) get(id uint64) *workerHealth {
	h := e.w[id]
	if h == nil {
		h = &workerHealth{}
		e.w[id] = h
	}
	return h
}

// forget drops a removed worker's health state.
func (e *engineState) forget(id uint64) {
	e.mu.Lock()
	delete(e.w, id)
	e.mu.Unlock()
}

// fetchEngine scrapes base/metrics.
func (p *Pool) fetchEngine(ctx context.Context, base string) (engineReport, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return engineReport{}, err
	}
	// The plain text format: every engine serves it.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := p.client.Do(req)
	if err != nil {
		return engineReport{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return engineReport{}, fmt.Errorf("frontend: %s/metrics: %s: %w", base, resp.Status, errNoEngineMetrics)
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return engineReport{}, fmt.Errorf("frontend: %s/metrics: %s", base, resp.Status)
	}
	rep, err := parseEngineMetrics(io.LimitReader(resp.Body, 16<<20))
	if err == nil && rep.Known == 0 {
		err = fmt.Errorf("frontend: %s/metrics: %w", base, errNoEngineMetrics)
	}
	return rep, err
}

// probeHealth asks base/health (vLLM, SGLang, the simulator, the mocker),
// falling back to /v1/models when /health does not exist.
func (p *Pool) probeHealth(ctx context.Context, base string) error {
	for _, path := range []string{"/health", "/v1/models"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return err
		}
		resp, err := p.client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			return nil
		case resp.StatusCode == http.StatusNotFound && path == "/health":
			continue
		}
		return fmt.Errorf("frontend: %s%s: %d", base, path, resp.StatusCode)
	}
	return fmt.Errorf("frontend: %s: no health endpoint", base)
}

// Run scrapes every worker's /metrics each LoadPollInterval: the KV
// usage feeds the busy thresholds, the cache config is checked against the
// router's block size, and PollFailuresDown failures in a row take the
// worker out of routing. A worker without engine metrics is asked
// /health (else /v1/models) instead, with the same failure count. Down workers are probed at GET /health with
// exponential backoff (from the poll interval up to probeMaxBackoff) and
// come back once healthy. It returns when ctx is done, after the
// self-tests it started; Config.LoadPollInterval must be positive.
func (p *Pool) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.LoadPollInterval)
	defer t.Stop()
	var tests sync.WaitGroup // self-tests run beside the polls
	defer tests.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ws := p.List()
		var wg sync.WaitGroup
		for i := range ws {
			wg.Add(1)
			go func(w *Worker) {
				defer wg.Done()
				// A slow answer is not a failure below a second, even
				// with a fast poll interval.
				pctx, cancel := context.WithTimeout(ctx, max(p.cfg.LoadPollInterval*4, time.Second))
				defer cancel()
				p.Poll(pctx, w, time.Now())
			}(&ws[i])
		}
		wg.Wait()
		p.selfTests(ctx, ws, time.Now(), &tests)
	}
}

// Poll polls worker w once at now, as each of Run's rounds does (w is a
// copy, as List gives). For callers that drive the clock themselves.
func (p *Pool) Poll(ctx context.Context, w *Worker, now time.Time) {
	p.eng.mu.Lock()
	h := p.eng.get(w.ID)
	refused := h.refused
	if w.down && refused == "" && now.Before(h.probeAt) {
		p.eng.mu.Unlock()
		return
	}
	p.eng.mu.Unlock()
	if w.down && refused == "" {
		err := p.probeHealth(ctx, w.URL)
		p.eng.mu.Lock()
		if err != nil {
			h.backoff = min(max(2*h.backoff, p.cfg.LoadPollInterval), probeMaxBackoff)
			h.probeAt = now.Add(h.backoff)
			p.eng.mu.Unlock()
			p.m.probes.WithLabelValues("down").Inc()
			return
		}
		h.backoff, h.fails = 0, 0
		p.eng.mu.Unlock()
		p.m.probes.WithLabelValues("up").Inc()
		p.markUp(w.ID)
	}
	var rep engineReport
	err := errNoEngineMetrics
	if !w.NoMetrics {
		rep, err = p.fetchEngine(ctx, w.URL)
	}
	noMetrics := errors.Is(err, errNoEngineMetrics)
	if noMetrics {
		// Any OpenAI-compatible server: alive if it answers; its load is
		// the router's own bookings.
		err = p.probeHealth(ctx, w.URL)
	}
	p.eng.mu.Lock()
	if h.noMetrics != noMetrics && err == nil {
		h.noMetrics = noMetrics
		if noMetrics {
			p.log.Info("worker has no engine metrics; health from /health, load from the router's bookings", "worker", w.ID, "url", w.URL)
		}
	}
	p.eng.mu.Unlock()
	if err != nil {
		p.eng.mu.Lock()
		h.fails++
		down := h.fails >= PollFailuresDown && !w.down
		p.eng.mu.Unlock()
		if down {
			p.log.Warn("worker metrics unreachable", "worker", w.ID, "url", w.URL, "failures", PollFailuresDown, "err", err)
			p.MarkDown(w.ID)
		}
		return
	}
	p.noteEngineStart(w, rep.StartTime)
	p.eng.mu.Lock()
	h.fails = 0
	learn := !now.Before(h.modelsAt)
	if learn {
		h.modelsAt = now.Add(modelsRefresh)
	}
	p.eng.mu.Unlock()
	if learn {
		p.learnAdapters(ctx, w)
	}
	if noMetrics {
		return
	}
	if !p.checkEngineConfig(w, rep) {
		return
	}
	if rep.SGLang && w.FleetBudget {
		p.learnBudget(ctx, w, h)
	}
	for rk, l := range rep.Ranks {
		if l.HasKV {
			_ = p.rt.UpdateWorkerMetrics(kvevents.Worker{ID: w.ID, Rank: rk}, router.Metrics{KVUsage: l.KVUsage})
		}
		if rk == 0 {
			p.m.workerKV.WithLabelValues(strconv.FormatUint(w.ID, 10)).Set(l.KVUsage)
			p.m.workerPrefill.WithLabelValues(strconv.FormatUint(w.ID, 10)).Set(l.PrefillTokens)
		}
	}
}

// checkEngineConfig compares the block size and capacity an engine reports
// with the router's. A block size mismatch refuses the worker: its KV
// events would never match the router's hashes and its overlap would read
// zero, so it is logged once, counted (kvrouter_workers_refused_total
// {reason="block_size"}) and kept out of routing until the engine reports
// the router's size. A capacity that differs from the configured one is
// logged once; an unconfigured capacity is taken from the engine. It
// reports whether the worker may be routed to.
func (p *Pool) checkEngineConfig(w *Worker, rep engineReport) bool {
	bs := p.cfg.BlockSize
	p.eng.mu.Lock()
	h := p.eng.get(w.ID)
	prevRefused := h.refused
	changedBS := rep.BlockSize != h.engineBS
	h.engineBS, h.engineBlocks = rep.BlockSize, rep.GPUBlocks
	mismatch := rep.BlockSize != 0 && rep.BlockSize != bs
	if mismatch {
		h.refused = "block_size"
	} else {
		h.refused = ""
	}
	warnBlocks := rep.GPUBlocks > 0 && w.Info.TotalKVBlocks > 0 && rep.GPUBlocks != w.Info.TotalKVBlocks && !h.warnedBlocks
	if warnBlocks {
		h.warnedBlocks = true
	}
	p.eng.mu.Unlock()
	switch {
	case mismatch && (prevRefused == "" || changedBS):
		p.MarkDown(w.ID)
		p.CountRefused("block_size")
		p.log.Error("worker refused: engine block size mismatch; its KV events would never match",
			"worker", w.ID, "url", w.URL, "engine_block_size", rep.BlockSize, "router_block_size", bs)
		return false
	case mismatch:
		return false
	case prevRefused != "":
		p.log.Info("worker block size now matches", "worker", w.ID, "block_size", rep.BlockSize)
		p.markUp(w.ID)
	}
	if warnBlocks {
		p.log.Warn("worker KV capacity differs from its configuration; using the configured one",
			"worker", w.ID, "engine_gpu_blocks", rep.GPUBlocks, "configured_kv_blocks", w.Info.TotalKVBlocks)
	}
	if rep.GPUBlocks > 0 && w.Info.TotalKVBlocks == 0 {
		p.mu.Lock()
		var info router.WorkerInfo
		cur, ok := p.workers[w.ID]
		if ok {
			cur.Info.TotalKVBlocks = rep.GPUBlocks
			info = cur.Info
		}
		down := ok && cur.down
		p.mu.Unlock()
		if ok && !down {
			_ = p.rt.AddWorker(info)
		}
	}
	return true
}

// Up counts the workers in routing (not down, not refused).
func (p *Pool) Up() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	n := 0
	for _, w := range p.workers {
		if !w.down {
			n++
		}
	}
	return n
}

// NotUp says why the registered workers that are not up are out: how many
// were refused, by reason (with the engine's and the router's block size),
// and how many are down ("" when none is out). /readyz appends it, so an
// operator sees "1 refused: block_size (engine 16, router 64)" rather
// than only "no workers up".
func (p *Pool) NotUp() string {
	p.mu.RLock()
	var out []uint64
	for id, w := range p.workers {
		if w.down {
			out = append(out, id)
		}
	}
	p.mu.RUnlock()
	if len(out) == 0 {
		return ""
	}
	slices.Sort(out)
	refused := map[string][]string{}
	var reasons []string
	down := 0
	p.eng.mu.Lock()
	for _, id := range out {
		h := p.eng.w[id]
		if h == nil || h.refused == "" {
			down++
			continue
		}
		if _, ok := refused[h.refused]; !ok {
			reasons = append(reasons, h.refused)
		}
		what := fmt.Sprintf("worker %d", id)
		if h.refused == "block_size" {
			what += fmt.Sprintf(": engine %d, router %d", h.engineBS, p.cfg.BlockSize)
		}
		refused[h.refused] = append(refused[h.refused], what)
	}
	p.eng.mu.Unlock()
	var parts []string
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%d refused for %s (%s)", len(refused[r]), r, strings.Join(refused[r], "; ")))
	}
	if down > 0 {
		parts = append(parts, fmt.Sprintf("%d down (failed polls)", down))
	}
	return strings.Join(parts, ", ")
}

// EngineHealth is a worker's health line in GET /debug/index.
type EngineHealth struct {
	Refused         string `json:"refused,omitempty"`
	PollFailures    int    `json:"poll_failures,omitempty"`
	EngineBlockSize int    `json:"engine_block_size,omitempty"`
	EngineGPUBlocks int    `json:"engine_gpu_blocks,omitempty"`
	// NoMetrics: the worker serves no engine metrics (or is metrics=off);
	// its health comes from /health or /v1/models.
	NoMetrics bool `json:"no_metrics,omitempty"`
}

// EngineBlockSize is the block size worker id's engine last reported
// (0: none).
func (p *Pool) EngineBlockSize(id uint64) int {
	p.eng.mu.Lock()
	defer p.eng.mu.Unlock()
	if h := p.eng.w[id]; h != nil {
		return h.engineBS
	}
	return 0
}

// Health is worker id's health line for GET /debug/index (nil before
// its first poll).
func (p *Pool) Health(id uint64) *EngineHealth {
	p.eng.mu.Lock()
	defer p.eng.mu.Unlock()
	h := p.eng.w[id]
	if h == nil {
		return nil
	}
	return &EngineHealth{Refused: h.refused, PollFailures: h.fails, EngineBlockSize: h.engineBS, EngineGPUBlocks: h.engineBlocks,
		NoMetrics: h.noMetrics}
}
