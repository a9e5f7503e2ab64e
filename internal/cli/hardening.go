package cli

import (
	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/spf13/pflag"
)

// BindServeHardening binds serve's trust-boundary flags: the client
// bounds and where the embedded NATS listens (beyond loopback only with
// --nats-user/--nats-password, --nats-token or --nats-nkey).
func BindServeHardening(f *pflag.FlagSet, c *app.ServeConfig) {
	bindHardening(f, &c.Frontend.Hardening)
	aff := &c.Frontend.Router.Affinity
	f.IntVar(&aff.MaxIDBytes, "session-id-max-bytes", aff.MaxIDBytes, "longest x-session-id / session_id accepted; longer is a 400 (0 = no bound)")
	f.IntVar(&aff.MaxSessions, "affinity-max-sessions", aff.MaxSessions, "session bindings held (own and other replicas'); beyond, the least recently bound are evicted (0 = no bound)")
	f.Int64Var(&aff.MaxBytes, "affinity-max-bytes", aff.MaxBytes, "bytes the session bindings may hold (id + 112 each); beyond, the least recently bound are evicted (0 = no bound)")
	f.Int64Var(&c.Replica.SnapshotMaxBytes, "snapshot-max-bytes", c.Replica.SnapshotMaxBytes, "largest snapshot object a starting replica reads; a larger one is skipped for an older one or a stream replay")
	f.StringVar(&c.NATS.Host, "embedded-nats-host", c.NATS.Host, "embedded NATS listen host; beyond loopback it requires credentials (--nats-user and --nats-password, --nats-token or --nats-nkey)")
	f.StringVar(&c.NATS.EmbeddedTLSCert, "embedded-nats-tls-cert", c.NATS.EmbeddedTLSCert, "embedded NATS server certificate (PEM): clients must use TLS")
	f.StringVar(&c.NATS.EmbeddedTLSKey, "embedded-nats-tls-key", c.NATS.EmbeddedTLSKey, "embedded NATS server key (PEM)")
	f.Int64Var(&c.ZMQMaxMessageBytes, "zmq-max-message-bytes", c.ZMQMaxMessageBytes, "largest ZMQ message (frame, and frames of one message together) read from an engine; a peer announcing more is dropped before it is allocated (kvrouter_zmq_peers_dropped_total)")
	f.Int64Var(&c.ZMQHoldMaxBytes, "zmq-hold-max-bytes", c.ZMQHoldMaxBytes, "--zmq-bind: bytes of messages held for pods no worker has yet (also 1024 messages, 30s); oldest dropped beyond")
}

// bindHardening binds the frontend's client bounds (frontend.Hardening).
func bindHardening(f *pflag.FlagSet, h *frontend.Hardening) {
	f.IntVar(&h.MaxModelLen, "max-model-len", h.MaxModelLen, "the model's context in tokens: prompt + max_tokens beyond it is a 400 context_length_exceeded (0 = unknown: max_tokens bounded by 2^24)")
	f.DurationVar(&h.BodyTimeout, "body-timeout", h.BodyTimeout, "a request's headers and body must arrive within this (negative = no bound)")
	f.DurationVar(&h.IdleTimeout, "idle-timeout", h.IdleTimeout, "close keep-alive connections idle this long (negative = never)")
	f.IntVar(&h.MaxBodies, "max-bodies", h.MaxBodies, "request bodies read at once; beyond, 503 (negative = no bound)")
	f.IntVar(&h.PromptBytesPerToken, "prompt-bytes-per-token", h.PromptBytesPerToken, "with --max-prompt-tokens: refuse text longer than this many bytes per allowed token before tokenizing (negative = no byte check)")
	f.IntVar(&h.Tokenizers, "tokenizers", h.Tokenizers, "concurrent tokenizations (0 = GOMAXPROCS, negative = no bound)")
	f.IntVar(&h.TokenizeQueue, "tokenize-queue", h.TokenizeQueue, "tokenizations waiting for a slot; beyond, 529")
	f.Int64Var(&h.TokenizeQueueBytes, "tokenize-queue-bytes", h.TokenizeQueueBytes, "bytes of prompt text the tokenizations running or waiting may hold together; beyond, 529 (negative = no bound)")
	f.DurationVar(&h.BookingTTL, "booking-ttl", h.BookingTTL, "release a tracked /route booking not freed within this (negative = the stale limit only)")
	f.IntVar(&h.MaxTrackedPerKey, "max-tracked-per-key", h.MaxTrackedPerKey, "tracked /route bookings one API key (or client address when no --api-key is set) may hold; beyond, 429 (negative = no bound)")
	f.IntVar(&h.MaxBookings, "max-bookings", h.MaxBookings, "tracked /route bookings of all callers together; beyond, 429 (negative = no bound)")
	f.Int64Var(&h.MaxBookingBytes, "max-booking-bytes", h.MaxBookingBytes, "bytes the tracked /route bookings of all callers may hold (8 per prompt block + ~600 each); beyond, 429 (negative = no bound)")
	f.DurationVar(&h.StreamWriteTimeout, "stream-write-timeout", h.StreamWriteTimeout, "cut an answer when a write to its client waits this long (a client that stopped reading): its engine request is cancelled, its load released (negative = no bound)")
	f.Int64Var(&h.MaxAnswerBytes, "max-answer-bytes", h.MaxAnswerBytes, "bytes of one engine answer the router buffers (a non-streaming answer folded from a stream: 502 beyond; a JSON answer read for usage: relayed unbuffered beyond) (negative = no bound)")
	f.IntVar(&h.MaxStreams, "max-streams", h.MaxStreams, "requests proxied at once (those waiting in the queue included); beyond, 503 too_many_streams (negative = no bound)")
	f.Int64Var(&h.MaxStreamBufferBytes, "max-stream-buffer-bytes", h.MaxStreamBufferBytes, "bytes the proxied requests' stream buffers (SSE events, folded and JSON answers) may hold together; beyond, a folded answer is a 502, a JSON answer relayed unbuffered (negative = no bound)")
	f.BoolVar(&h.MetricsAuth, "metrics-auth", h.MetricsAuth, "put /metrics behind the admin key")
	f.BoolVar(&h.Pprof, "pprof", h.Pprof, "serve /debug/pprof/ behind the admin key")
}
