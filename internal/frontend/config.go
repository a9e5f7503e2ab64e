package frontend

import (
	"errors"
	"fmt"
	"github.com/kvrouter/kvrouter/internal/decisionlog"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/tokenizer"
	"github.com/prometheus/client_golang/prometheus"
)

// Index kinds: the event-fed index implementations (DESIGN.md §3).
const (
	IndexFlash = "flash"
	IndexRadix = "radix"
)

// Config configures a Server.
type Config struct {
	// Model is the served model name reported by /v1/models. Requests may
	// name any model; it is forwarded unchanged. Default "kvrouter-mock".
	Model string `yaml:"model"`
	// Tokenizer tokenizes text prompts and chats exactly as the workers do.
	// Required.
	Tokenizer tokenizer.Tokenizer `yaml:"-"`
	// Router configures the routing core: policy (Router.Policy), block
	// size, cost knobs, and the parameters of every index it builds
	// (Router.Index, one config per index kind: flash stride, concurrent
	// writers, approx TTL). Default router.DefaultConfig().
	Router router.Config `yaml:"router"`
	// Index chooses the event-fed index: IndexFlash or IndexRadix, built
	// with Router.Index.Flash or .Radix and fed through the sticky writers
	// of indexer.Concurrent (Router.Index.Concurrent; RunIndex). Default
	// "flash"; "" = flash.
	Index string `yaml:"index"`
	// Seed seeds the router's tie-breaking source. Default 0 = time-based
	// (replicas must differ); tests set it.
	Seed uint64 `yaml:"seed"`
	// ForwardTokens sends /v1/completions text prompts to workers as token
	// ids, so the worker computes exactly the blocks the router hashed, but
	// only with OwnTokenizer and only to workers whose tokenizer self-test
	// matched (package pool); every other worker gets the client's body and
	// the ids serve the routing only. Default true (set via DefaultConfig;
	// false always sends the text).
	ForwardTokens bool `yaml:"forward_tokens"`
	// OwnTokenizer says Tokenizer is the served model's own (its
	// tokenizer.json, or the built-in one for the mock model), so its ids
	// may be forwarded (ForwardTokens). Set by whoever chose Tokenizer
	// (internal/app resolves --tokenizer); not configuration. Default
	// false: ids are never forwarded.
	OwnTokenizer bool `yaml:"-"`
	// MaxBodyBytes bounds request bodies (413 beyond). Default 8 MiB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxPromptTokens bounds prompts (400 context_length_exceeded beyond).
	// Default 0 = unlimited.
	MaxPromptTokens int `yaml:"max_prompt_tokens"`
	// APIKeys, when non-empty, are the bearer tokens accepted on the client
	// API (/v1/*, /route). AdminKeys protect /debug/* (and are also
	// accepted on the client API). Empty = open. Secrets: logged masked.
	APIKeys   []string `yaml:"api_keys"`
	AdminKeys []string `yaml:"admin_keys"`
	// Retries is how many other workers a request tries when its worker
	// cannot be reached (connection refused, reset before the response).
	// Default 2.
	Retries int `yaml:"retries"`
	// LoadPollInterval is how often each worker's Prometheus GET /metrics
	// is polled for its load and KV usage (busy thresholds) and cache
	// config (block size check), and down workers are probed at GET
	// /health (package pool). Default 250ms; negative disables polling and
	// probing (a worker marked down then stays down).
	LoadPollInterval time.Duration `yaml:"load_poll_interval"`
	// SweepInterval is how often stale requests are swept. Default 10 s.
	SweepInterval time.Duration `yaml:"sweep_interval"`
	// DrainTimeout bounds graceful shutdown. Default 30 s.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// Transport is the upstream HTTP transport. Default: a tuned
	// http.Transport (keep-alives, no compression).
	Transport http.RoundTripper `yaml:"-"`
	// Registry receives the Prometheus metrics. Default a new registry.
	Registry *prometheus.Registry `yaml:"-"`
	// Logger; default slog.Default().
	Logger *slog.Logger `yaml:"-"`
	// Events are optional callbacks (tests, metrics).
	Events Events `yaml:"-"`
	// Readiness, when set, is asked by GET /readyz after the frontend's
	// own conditions (not draining, workers known): false answers 503.
	// detail is added to the body either way (a replica's catch-up and
	// lag, DESIGN.md §9). Default nil: the frontend's conditions only.
	Readiness func() (ok bool, detail string) `yaml:"-"`
	// TimingFit fits each worker's timing model online from the TTFT and
	// inter-token latency of its streamed responses (selector.TimingFit,
	// with Router.Selector.Timing as the prior) and prices the worker with
	// it in the time cost. Default true (DefaultConfig); false (zero)
	// prices every worker with Router.Selector.Timing. No effect with the
	// blocks cost.
	TimingFit bool `yaml:"timing_fit"`
	// PrefillTimeout bounds a disaggregated request's prefill hop
	// (disagg.go); past it another prefill worker is tried. Default 60 s;
	// zero means the default.
	PrefillTimeout time.Duration `yaml:"prefill_timeout"`
	// KVBytesPerToken is the served model's KV cache size per token, which
	// turns transferred blocks into kvrouter_disagg_transfer_bytes_total.
	// Default 131072 (a Llama-3-8B-like fp16 KV, the mocker's); 0 means
	// the default.
	KVBytesPerToken int64 `yaml:"kv_bytes_per_token"`
	// LoRAAdapters are model names that are LoRA adapters: requests for
	// them are hashed with the name as salt, as the engines' events are.
	// Adapters the engines list in GET /v1/models (with a parent model)
	// are learnt as well. Default none.
	LoRAAdapters []string `yaml:"lora_adapters"`
	// AdminHandlers are extra endpoints ("GET /debug/loads") served
	// behind the admin keys like /debug/index. Default none.
	AdminHandlers map[string]http.Handler `yaml:"-"`
	// Hardening holds the bounds on what clients may cost the router
	// (limits.go). Default DefaultHardening().
	Hardening Hardening `yaml:"hardening"`
	// DecisionLog is the opt-in log of sampled routing decisions
	// (package decisionlog; docs/decision-log.md). Default off (no path).
	DecisionLog decisionlog.Config `yaml:"decision_log"`
	// WorkerMaxNumSeqs is the max_num_seqs (running requests per rank) of
	// workers whose registration does not say (vLLM and SGLang engines
	// register nothing; the mocker announces its own): at that cap the
	// time cost adds the wait for a slot (router.WorkerInfo.MaxNumSeqs).
	// Default 0 = unknown: no cap rule for such workers.
	WorkerMaxNumSeqs int `yaml:"worker_max_num_seqs"`
	// WorkerMaxBatchedTokens is the token budget per engine step (vLLM's
	// max_num_batched_tokens, SGLang's chunked_prefill_size) of workers
	// whose registration does not say: the queue threshold and the busy
	// prefill fraction are fractions of it (router.WorkerInfo.
	// MaxNumBatchedTokens). vLLM reports it in no metric, so without a
	// fleet default those two settings never engage for vLLM workers.
	// Default DefaultWorkerMaxBatchedTokens; 0 = unknown: such workers are
	// never saturated (neither queued for nor busy by prefill).
	WorkerMaxBatchedTokens int `yaml:"worker_max_batched_tokens"`
}

// DefaultWorkerMaxBatchedTokens is vLLM V1's default
// max_num_batched_tokens for its OpenAI server on the GPUs most fleets
// serve from (EngineArgs.get_batch_defaults: 8192 on devices with at
// least 70 GiB other than A100, such as H100, H200 and MI300X; 2048 on
// A100 and smaller devices). It is also the mocker's default budget and
// the timing model's (selector.Timing.MaxBatchedTokens).
const DefaultWorkerMaxBatchedTokens = 8192

// Events are optional callbacks, called on request goroutines.
type Events struct {
	// OnEvent is called after each KV event was applied (err nil) or refused.
	OnEvent func(workerID uint64, err error)
	// OnFree is called after a proxied request released its load.
	OnFree func(requestID string, worker uint64)
	// OnWorkerDown is called when a worker could not be reached and was
	// taken out of routing (its index entries and loads dropped); OnWorkerUp
	// when it answers again and is back. Event transports use them to reset
	// their per-worker state.
	OnWorkerDown, OnWorkerUp func(id uint64)
	// OnBooking is handed to the router (router.Events.OnBooking): every
	// change of this router's own load and affinity state, for the other
	// replicas (DESIGN.md §9 load sync). Called on request goroutines.
	OnBooking func(b router.Booking)
}

// DefaultConfig returns the defaults; Tokenizer must still be set.
func DefaultConfig() Config {
	return Config{
		Model:            "kvrouter-mock",
		Router:           router.DefaultConfig(),
		Index:            IndexFlash,
		ForwardTokens:    true,
		MaxBodyBytes:     8 << 20,
		Retries:          2,
		LoadPollInterval: 250 * time.Millisecond,
		SweepInterval:    10 * time.Second,
		DrainTimeout:     30 * time.Second,
		TimingFit:        true,
		Hardening:        DefaultHardening(),
		PrefillTimeout:   60 * time.Second,
		KVBytesPerToken:  131072,

		WorkerMaxBatchedTokens: DefaultWorkerMaxBatchedTokens,
	}
}

// Validate reports every problem.
func (c Config) Validate() error {
	var errs []error
	if c.Tokenizer == nil {
		errs = append(errs, errors.New("frontend: a tokenizer is required"))
	}
	if c.Index != "" && c.Index != IndexRadix && c.Index != IndexFlash {
		errs = append(errs, fmt.Errorf("frontend: unknown index %q (want radix or flash)", c.Index))
	}
	if c.MaxBodyBytes < 0 || c.MaxPromptTokens < 0 || c.Retries < 0 {
		errs = append(errs, errors.New("frontend: negative body limit, prompt limit or retries"))
	}
	if c.WorkerMaxNumSeqs < 0 || c.WorkerMaxNumSeqs > discovery.MaxNumSeqs {
		errs = append(errs, fmt.Errorf("frontend: worker max_num_seqs %d out of [0, %d]", c.WorkerMaxNumSeqs, discovery.MaxNumSeqs))
	}
	if c.WorkerMaxBatchedTokens < 0 || c.WorkerMaxBatchedTokens > discovery.MaxBatchedTokens {
		errs = append(errs, fmt.Errorf("frontend: worker max_batched_tokens %d out of [0, %d]", c.WorkerMaxBatchedTokens, discovery.MaxBatchedTokens))
	}
	if err := c.Router.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Hardening.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	d := DefaultConfig()
	if c.Model == "" {
		c.Model = d.Model
	}
	if c.Index == "" {
		c.Index = d.Index
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	if c.LoadPollInterval == 0 {
		c.LoadPollInterval = d.LoadPollInterval
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = d.SweepInterval
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = d.DrainTimeout
	}
	c.Hardening.setDefaults()
	if c.PrefillTimeout <= 0 {
		c.PrefillTimeout = d.PrefillTimeout
	}
	if c.KVBytesPerToken <= 0 {
		c.KVBytesPerToken = d.KVBytesPerToken
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Transport == nil {
		c.Transport = &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 512,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}
	}
}
