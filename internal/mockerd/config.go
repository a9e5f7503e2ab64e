package mockerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// EventSink receives the engine's KV events in event-id order.
// eventplane.Publisher implements it.
type EventSink interface {
	Publish(ctx context.Context, ev kvevents.Event) error
}

// EventSinkFunc adapts a function to EventSink.
type EventSinkFunc func(ctx context.Context, ev kvevents.Event) error

// Publish calls f.
func (f EventSinkFunc) Publish(ctx context.Context, ev kvevents.Event) error { return f(ctx, ev) }

// Config configures a Server.
type Config struct {
	// Engine is the engine core's configuration (block size, blocks, speedup
	// ratio, worker id in Engine.Worker). Default mocker.DefaultConfig().
	Engine mocker.Config `yaml:"engine"`
	// Model is the served model name. Default "kvrouter-mock". Requests
	// naming another model get 404, as vLLM does; an empty model is accepted.
	Model string `yaml:"model"`
	// Tokenizer turns text prompts and chats into tokens; it must be the
	// router's. Required.
	Tokenizer tokenizer.Tokenizer `yaml:"-"`
	// Sinks receive every KV event (e.g. the NATS publisher and a ZMQ PUB).
	// Default none: events are counted and dropped.
	Sinks []EventSink `yaml:"-"`
	// ZMQ, when set, also publishes every event vLLM-style on a ZMQ PUB
	// socket (with replay). Default nil.
	ZMQ *ZMQPublisher `yaml:"-"`
	// SharedLock, when the engine has a G4 store (Engine.Tiers.Shared)
	// shared with other servers of this process, serializes every engine
	// call that may touch it (tiers.go). Default nil: the store is this
	// server's alone.
	SharedLock sync.Locker `yaml:"-"`
	// SharedSinks receive the G4 store's events (its own identity and
	// event ids) instead of Sinks, published under SharedLock so they
	// stay in id order across servers. Default none: they go to Sinks.
	SharedSinks []EventSink `yaml:"-"`
	// DefaultMaxTokens is the output length when a request gives none.
	// Default 16 (OpenAI's completions default).
	DefaultMaxTokens int `yaml:"default_max_tokens"`
	// MaxModelLen caps prompt + output tokens. Default (0): the KV capacity
	// NumBlocks * BlockSize.
	MaxModelLen int `yaml:"max_model_len"`
	// AdvertiseURL is where other workers reach this one: the remote_host
	// and remote_port of its disaggregated prefills' kv_transfer_params
	// (disagg.go). Default "": none (a decode mocker then releases
	// nothing).
	AdvertiseURL string `yaml:"-"`
	// MaxLoRAs is the LoRA adapter slots (vLLM's --max-loras): > 0 serves
	// any other model name as an adapter loaded on first use (lora.go).
	// Default 0: the base model only.
	MaxLoRAs int `yaml:"max_loras"`
	// Logger; default slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// DefaultConfig returns the defaults; Tokenizer must still be set.
func DefaultConfig() Config {
	return Config{Engine: mocker.DefaultConfig(), Model: "kvrouter-mock", DefaultMaxTokens: 16}
}

// Validate reports every problem.
func (c Config) Validate() error {
	var errs []error
	if err := c.Engine.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Tokenizer == nil {
		errs = append(errs, errors.New("mockerd: a tokenizer is required"))
	}
	if c.DefaultMaxTokens < 0 {
		errs = append(errs, fmt.Errorf("mockerd: default max tokens %d is negative", c.DefaultMaxTokens))
	}
	if c.MaxModelLen < 0 {
		errs = append(errs, fmt.Errorf("mockerd: max model len %d is negative", c.MaxModelLen))
	}
	if c.MaxLoRAs < 0 || c.MaxLoRAs > MaxLoRASlots {
		errs = append(errs, fmt.Errorf("mockerd: max loras %d not in [0, %d]", c.MaxLoRAs, MaxLoRASlots))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Model == "" {
		c.Model = "kvrouter-mock"
	}
	if c.DefaultMaxTokens == 0 {
		c.DefaultMaxTokens = 16
	}
	if c.MaxModelLen == 0 {
		c.MaxModelLen = c.Engine.NumBlocks * c.Engine.BlockSize
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Load is the worker's load report served at GET /load (JSON). The router
// polls it for busy thresholds.
type Load struct {
	WorkerID            uint64  `json:"worker_id"`
	DPRank              uint32  `json:"dp_rank"`
	KVUsage             float64 `json:"kv_usage"`
	ActivePrefillTokens int     `json:"active_prefill_tokens"`
	Waiting             int     `json:"num_requests_waiting"`
	Running             int     `json:"num_requests_running"`
	TotalBlocks         int     `json:"total_blocks"`
	ActiveBlocks        int     `json:"active_blocks"`
	CachedBlocks        int     `json:"cached_blocks"`
	BlockSize           int     `json:"block_size"`
	MaxNumBatchedTokens int     `json:"max_num_batched_tokens"`
	PromptTokensCached  uint64  `json:"prompt_tokens_cached"`
	PromptTokensTotal   uint64  `json:"prompt_tokens_total"`
	EventsPublished     uint64  `json:"events_published"`
	// Disaggregation (disagg.go): finished prefills holding their blocks,
	// and releases of pulled blocks that failed on the prefill worker.
	HeldRequests    int    `json:"held_requests"`
	KVReleaseErrors uint64 `json:"kv_release_errors"`
}
