package frontend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/internal/bounds"
	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// MaxOutputCeiling bounds max_tokens when the model's context is not
// configured (Hardening.MaxModelLen 0): above every model's context, far
// below where output arithmetic could overflow.
const MaxOutputCeiling = 1 << 24

// Hardening bounds what one client can cost the router: output limits,
// slow or idle connections, bodies and tokenizations in flight, tracked
// bookings. Every bound answers with an OpenAI-style error.
type Hardening struct {
	// MaxModelLen is the model's context in tokens: a request whose
	// prompt plus max_tokens exceeds it is refused with 400
	// context_length_exceeded (vLLM's answer, before any worker is
	// asked). Default 0 = unknown: max_tokens is bounded by
	// MaxOutputCeiling only.
	MaxModelLen int `yaml:"max_model_len"`
	// BodyTimeout is how long a request (headers and body) may take to
	// arrive (http.Server.ReadTimeout). Default 30s; negative = no bound.
	BodyTimeout time.Duration `yaml:"body_timeout"`
	// IdleTimeout closes keep-alive connections idle this long. Default
	// 120s; negative = never.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxBodies bounds request bodies being read at once; beyond, 503
	// with Retry-After. Default 512; negative = no bound.
	MaxBodies int `yaml:"max_bodies"`
	// PromptBytesPerToken derives a byte budget for text prompts from
	// MaxPromptTokens: a text longer than MaxPromptTokens times this is
	// refused before it is encoded (no tokenizer emits tokens that long
	// on average). Default 32; negative = no byte check. No effect
	// while MaxPromptTokens is 0.
	PromptBytesPerToken int `yaml:"prompt_bytes_per_token"`
	// Tokenizers bounds concurrent tokenizations; TokenizeQueue more may
	// wait for one; beyond, 529 overloaded. Default GOMAXPROCS and 64;
	// negative Tokenizers = no bound.
	Tokenizers    int `yaml:"tokenizers"`
	TokenizeQueue int `yaml:"tokenize_queue"`
	// TokenizeQueueBytes bounds the prompt text of the tokenizations
	// running or waiting together; beyond, 529 overloaded (a prompt is
	// always admitted when none is in flight, so one larger than the
	// bound is not refused forever). Exported with the count as
	// kvrouter_store_*{store="tokenize_queue"}. Default 64 MiB; negative
	// = no bound.
	TokenizeQueueBytes int64 `yaml:"tokenize_queue_bytes"`
	// BookingTTL releases a tracked /route booking (track:true) not freed
	// within this time. Default 30s; negative = the router's stale limit
	// only.
	BookingTTL time.Duration `yaml:"booking_ttl"`
	// MaxTrackedPerKey bounds the tracked /route bookings one API key
	// (one client address when the API is open) holds at once; beyond,
	// 429. Default 64; negative = no bound.
	MaxTrackedPerKey int `yaml:"max_tracked_per_key"`
	// MaxBookings and MaxBookingBytes bound the tracked /route bookings
	// of all callers together, in count and in bytes (an estimate: 8 per
	// prompt block, the hashes the load tracker copies, plus ~600 per
	// booking); beyond, 429. Exported as kvrouter_store_*{store=
	// "bookings"}. Defaults 4096 and 64 MiB; negative = no bound.
	MaxBookings     int   `yaml:"max_bookings"`
	MaxBookingBytes int64 `yaml:"max_booking_bytes"`
	// StreamWriteTimeout bounds each write of an answer to the client
	// (streamed or not): a client that takes none of it for this long is
	// cut, its engine request cancelled and its load released
	// (kvrouter_stream_write_timeouts_total; outcome client_slow). Per
	// write, not per answer: a long stream read steadily is never cut.
	// Default 30s; negative = no bound.
	StreamWriteTimeout time.Duration `yaml:"stream_write_timeout"`
	// MaxAnswerBytes bounds what the router buffers of one engine answer:
	// a non-streaming answer folded from a stream (beyond: 502
	// worker_stream_error) or a JSON answer read for its usage (beyond:
	// relayed unbuffered, usage not read); counted in
	// kvrouter_engine_answer_too_large_total{kind}. Streams are relayed
	// event by event (each at most 1 MiB) and never buffered whole.
	// Default 32 MiB; negative = no bound.
	MaxAnswerBytes int64 `yaml:"max_answer_bytes"`
	// MaxStreams bounds the requests proxied at once (each may hold
	// stream buffers: an SSE event of at most 1 MiB, a folded or JSON
	// answer of at most MaxAnswerBytes); beyond, 503 too_many_streams
	// before any routing. Requests waiting in the router's queue count.
	// MaxStreamBufferBytes bounds what all their buffers hold together:
	// a folded answer beyond it is a 502 worker_stream_error, a JSON
	// answer is relayed unbuffered (kvrouter_engine_answer_too_large_total
	// as for MaxAnswerBytes). Exported as kvrouter_store_*{store=
	// "stream_buffers"}. Defaults 8192 and 1 GiB; negative = no bound.
	MaxStreams           int   `yaml:"max_streams"`
	MaxStreamBufferBytes int64 `yaml:"max_stream_buffer_bytes"`
	// MetricsAuth puts GET /metrics behind the admin keys. Default false.
	MetricsAuth bool `yaml:"metrics_auth"`
	// Pprof serves net/http/pprof under /debug/pprof/ behind the admin
	// keys. Default false.
	Pprof bool `yaml:"pprof"`
}

// DefaultHardening returns the defaults.
func DefaultHardening() Hardening {
	return Hardening{BodyTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second, MaxBodies: 512,
		PromptBytesPerToken: 32, TokenizeQueue: 64, BookingTTL: 30 * time.Second, MaxTrackedPerKey: 64,
		MaxBookings: 4096, MaxBookingBytes: 64 << 20, StreamWriteTimeout: 30 * time.Second,
		MaxAnswerBytes: 32 << 20, TokenizeQueueBytes: 64 << 20,
		MaxStreams: 8192, MaxStreamBufferBytes: 1 << 30}
}

// Validate reports every problem.
func (h Hardening) Validate() error {
	var errs []error
	if h.MaxModelLen < 0 {
		errs = append(errs, fmt.Errorf("frontend: max model len %d < 0", h.MaxModelLen))
	}
	if h.TokenizeQueue < 0 {
		errs = append(errs, fmt.Errorf("frontend: tokenize queue %d < 0", h.TokenizeQueue))
	}
	return errors.Join(errs...)
}

func (h *Hardening) setDefaults() {
	d := DefaultHardening()
	if h.BodyTimeout == 0 {
		h.BodyTimeout = d.BodyTimeout
	}
	if h.IdleTimeout == 0 {
		h.IdleTimeout = d.IdleTimeout
	}
	if h.MaxBodies == 0 {
		h.MaxBodies = d.MaxBodies
	}
	if h.PromptBytesPerToken == 0 {
		h.PromptBytesPerToken = d.PromptBytesPerToken
	}
	if h.Tokenizers == 0 {
		h.Tokenizers = runtime.GOMAXPROCS(0)
	}
	if h.BookingTTL == 0 {
		h.BookingTTL = d.BookingTTL
	}
	if h.MaxTrackedPerKey == 0 {
		h.MaxTrackedPerKey = d.MaxTrackedPerKey
	}
	if h.MaxAnswerBytes == 0 {
		h.MaxAnswerBytes = d.MaxAnswerBytes
	}
	if h.StreamWriteTimeout == 0 {
		h.StreamWriteTimeout = d.StreamWriteTimeout
	}
	if h.MaxStreams == 0 {
		h.MaxStreams = d.MaxStreams
	}
	if h.MaxStreamBufferBytes == 0 {
		h.MaxStreamBufferBytes = d.MaxStreamBufferBytes
	}
	if h.TokenizeQueueBytes == 0 {
		h.TokenizeQueueBytes = d.TokenizeQueueBytes
	}
	if h.MaxBookings == 0 {
		h.MaxBookings = d.MaxBookings
	}
	if h.MaxBookingBytes == 0 {
		h.MaxBookingBytes = d.MaxBookingBytes
	}
}

// positive maps the "negative = off" convention to 0.
func positive[T int | int64 | time.Duration](v T) T { return max(v, 0) }

// checkOutput refuses a max_tokens the model's context cannot hold. It
// compares without summing (max_tokens may be near 2^63).
func (s *Server) checkOutput(prompt, maxTokens int) *oai.Error {
	limit := s.cfg.Hardening.MaxModelLen
	if maxTokens <= 0 {
		return nil // absent: the worker's default
	}
	if limit > 0 && maxTokens > limit-prompt {
		s.m.limitRejects.WithLabelValues("max_tokens").Inc()
		return &oai.Error{Status: http.StatusBadRequest, Type: oai.TypeInvalidRequest, Param: "max_tokens",
			Code: "context_length_exceeded",
			Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the prompt, %d in the completion).",
				limit, uint64(prompt)+uint64(maxTokens), prompt, maxTokens)}
	}
	if maxTokens > MaxOutputCeiling {
		s.m.limitRejects.WithLabelValues("max_tokens").Inc()
		return &oai.Error{Status: http.StatusBadRequest, Type: oai.TypeInvalidRequest, Param: "max_tokens",
			Code:    "context_length_exceeded",
			Message: fmt.Sprintf("max_tokens %d is above any model's context (%d)", maxTokens, MaxOutputCeiling)}
	}
	return nil
}

// checkLimits checks the prompt, then the output limit.
func (s *Server) checkLimits(prompt, maxTokens int) *oai.Error {
	if e := s.checkPrompt(prompt); e != nil {
		return e
	}
	return s.checkOutput(prompt, maxTokens)
}

// readAllPrealloc bounds readAll's first allocation (most bodies are
// smaller: a 4k-token prompt as JSON ids is ~25 KB).
const readAllPrealloc = 64 << 10

// limiter bounds request bodies being read and tokenizations running or
// waiting (Hardening.MaxBodies, Tokenizers, TokenizeQueue,
// TokenizeQueueBytes). Its channels are made on first use; queue is made
// by New (it is registered there).
type limiter struct {
	once   sync.Once
	bodies chan struct{} // nil = unbounded
	tokens chan struct{} // running tokenizations; nil = unbounded
	// queue counts the tokenizations running or waiting and their
	// prompt bytes (store "tokenize_queue").
	queue *bounds.Store
}

// newTokenizeQueue is the store of tokenizations in flight: at most
// Tokenizers + TokenizeQueue of them (no count bound when Tokenizers is
// negative), TokenizeQueueBytes of prompt text.
func newTokenizeQueue(h Hardening) *bounds.Store {
	n := int64(0)
	if h.Tokenizers > 0 {
		n = int64(h.Tokenizers + h.TokenizeQueue)
	}
	return bounds.New("tokenize_queue", n, positive(h.TokenizeQueueBytes))
}

func (s *Server) limits() *limiter {
	s.lim.once.Do(func() {
		h := s.cfg.Hardening
		if h.MaxBodies > 0 {
			s.lim.bodies = make(chan struct{}, h.MaxBodies)
		}
		if h.Tokenizers > 0 {
			s.lim.tokens = make(chan struct{}, h.Tokenizers)
		}
		if s.lim.queue == nil {
			s.lim.queue = newTokenizeQueue(h)
		}
	})
	return &s.lim
}

// acquireBody takes a body slot, or answers 503 when all are taken (slow
// clients must not queue up unbounded memory).
func (s *Server) acquireBody() (release func(), e *oai.Error) {
	l := s.limits()
	if l.bodies == nil {
		return func() {}, nil
	}
	select {
	case l.bodies <- struct{}{}:
		return func() { <-l.bodies }, nil
	default:
		s.m.limitRejects.WithLabelValues("bodies").Inc()
		return nil, &oai.Error{Status: http.StatusServiceUnavailable, Type: oai.TypeServer, Code: "too_many_bodies",
			Message: "too many request bodies in flight; retry shortly"}
	}
}

// encode tokenizes a text prompt within the bounds: the byte budget
// first (no tokenizer spends CPU on a prompt that cannot fit), then a
// tokenization slot (waiting in a bounded queue; 529 when it is full).
func (s *Server) encode(ctx context.Context, text string) ([]uint32, error) {
	if e := s.checkPromptBytes(len(text)); e != nil {
		return nil, e
	}
	return s.tokenizeBounded(ctx, len(text), func() ([]uint32, error) { return s.cfg.Tokenizer.Encode(ctx, text) })
}

// encodeChat is encode for a chat (the budget counts the messages' text).
func (s *Server) encodeChat(ctx context.Context, msgs []tokenizer.Message, addGenerationPrompt bool) ([]uint32, error) {
	n := 0
	for _, m := range msgs {
		n += len(m.Content) + len(m.Role) + len(m.Name)
	}
	if e := s.checkPromptBytes(n); e != nil {
		return nil, e
	}
	return s.tokenizeBounded(ctx, n, func() ([]uint32, error) {
		return s.cfg.Tokenizer.EncodeChat(ctx, msgs, addGenerationPrompt)
	})
}

// checkPromptBytes refuses a text longer than MaxPromptTokens prompts can
// be (Hardening.PromptBytesPerToken bytes per token).
func (s *Server) checkPromptBytes(n int) *oai.Error {
	h := s.cfg.Hardening
	// n > MaxPromptTokens*PromptBytesPerToken, without the product.
	if s.cfg.MaxPromptTokens <= 0 || h.PromptBytesPerToken <= 0 || n == 0 || (n-1)/h.PromptBytesPerToken < s.cfg.MaxPromptTokens {
		return nil
	}
	s.m.limitRejects.WithLabelValues("prompt_bytes").Inc()
	return &oai.Error{Status: http.StatusBadRequest, Type: oai.TypeInvalidRequest, Param: "prompt",
		Code: "context_length_exceeded",
		Message: fmt.Sprintf("the prompt has %d bytes, more than this router's limit of %d tokens can hold (%d bytes per token)",
			n, s.cfg.MaxPromptTokens, h.PromptBytesPerToken)}
}

// tokenizeBounded runs fn, the tokenization of a prompt of n bytes, in a
// tokenization slot: at most Tokenizers run, TokenizeQueue more wait
// (until their client leaves), within TokenizeQueueBytes of prompt text
// together; the rest are refused with 529.
func (s *Server) tokenizeBounded(ctx context.Context, n int, fn func() ([]uint32, error)) ([]uint32, error) {
	l := s.limits()
	q, b := l.queue, int64(n)
	// Add, then check: concurrent admissions see each other's share
	// (both may be refused near the limit; none slips past it).
	q.Add(1, b)
	entries, bytes := q.Size()
	maxEntries, maxBytes := q.Limits()
	if (maxEntries > 0 && entries > maxEntries) || (maxBytes > 0 && bytes > maxBytes && bytes > b) {
		q.Add(-1, -b)
		s.m.limitRejects.WithLabelValues("tokenize_queue").Inc()
		return nil, &oai.Error{Status: StatusOverloaded, Type: oai.TypeOverloaded, Code: "overloaded",
			Message: "too many prompts being tokenized; retry later"}
	}
	defer q.Add(-1, -b)
	if l.tokens == nil {
		return fn()
	}
	select {
	case l.tokens <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-l.tokens }()
	return fn()
}

// MaxPriority bounds a request's priority (x-kvrouter-priority, /route's
// priority): the queue orders by it, and an infinite or huge value would
// let one client jump every queue forever.
const MaxPriority = 1e6
