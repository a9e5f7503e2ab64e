package mockerd

import (
	"strconv"

	"github.com/kvrouter/kvrouter/mocker"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the worker's Prometheus series. Gauges use vLLM's names so
// dashboards built for vLLM work unchanged.
type metrics struct {
	requests     prometheus.Counter
	passes       prometheus.Counter
	passSeconds  prometheus.Histogram
	ttft         prometheus.Histogram
	promptTokens prometheus.Counter
	cachedTokens prometheus.Counter
	genTokens    prometheus.Counter
}

func newMetrics(reg *prometheus.Registry, s *Server) metrics {
	m := metrics{
		requests: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_mocker_requests_total",
			Help: "Requests admitted to the engine."}),
		passes: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_mocker_passes_total",
			Help: "Forward passes run."}),
		passSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kvrouter_mocker_pass_seconds",
			Help: "Simulated duration of a forward pass.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:time_to_first_token_seconds",
			Help: "Time to first token (engine view).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		promptTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:prompt_tokens_total",
			Help: "Prompt tokens of finished requests."}),
		cachedTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_mocker_cached_prompt_tokens_total",
			Help: "Prompt tokens found in the prefix cache, over finished requests."}),
		genTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:generation_tokens_total",
			Help: "Generated tokens."}),
	}
	gauge := func(name, help string, f func(st mocker.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return f(s.Stats()) })
	}
	reg.MustRegister(m.requests, m.passes, m.passSeconds, m.ttft, m.promptTokens, m.cachedTokens, m.genTokens,
		gauge("vllm:kv_cache_usage_perc", "Fraction of KV blocks in use (1 = 100%).",
			func(st mocker.Stats) float64 { return st.Usage }),
		gauge("vllm:gpu_cache_usage_perc", "Fraction of KV blocks in use (older vLLM name).",
			func(st mocker.Stats) float64 { return st.Usage }),
		gauge("vllm:num_requests_running", "Requests running.",
			func(st mocker.Stats) float64 { return float64(st.Running) }),
		gauge("vllm:num_requests_waiting", "Requests waiting.",
			func(st mocker.Stats) float64 { return float64(st.Waiting) }),
		gauge("kvrouter_mocker_active_prefill_tokens", "Prompt tokens admitted but not yet computed.",
			func(st mocker.Stats) float64 { return float64(st.ActivePrefillTokens) }),
		gauge("kvrouter_mocker_cached_blocks", "Blocks holding cached content (active + inactive).",
			func(st mocker.Stats) float64 { return float64(st.ActiveBlocks + st.InactiveBlocks) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kvrouter_mocker_kv_events_total",
			Help: "KV events handed to the sinks."}, func() float64 { return float64(s.pubs.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kvrouter_mocker_kv_event_errors_total",
			Help: "KV event publish failures."}, func() float64 { return float64(s.pubErr.Load()) }),
	)
	// vLLM's cache config info gauge: the router checks the block size
	// and learns the capacity from it.
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:cache_config_info",
		Help: "Information of the KV cache config (vLLM's labels)."}, []string{"block_size", "num_gpu_blocks"})
	info.WithLabelValues(strconv.Itoa(s.cfg.Engine.BlockSize), strconv.Itoa(s.cfg.Engine.NumBlocks)).Set(1)
	reg.MustRegister(info)
	return m
}

func (m metrics) observePass(r *mocker.StepResult) {
	m.passes.Inc()
	m.passSeconds.Observe(r.Duration.Seconds())
	m.genTokens.Add(float64(len(r.Outputs)))
}

func (m metrics) observeResult(r *mocker.Result) {
	if r.OutputTokens > 0 {
		m.ttft.Observe(r.TTFT.Seconds())
	}
	m.promptTokens.Add(float64(r.PromptTokens))
	m.cachedTokens.Add(float64(r.CachedTokens))
}
