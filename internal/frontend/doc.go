// Package frontend is kvrouter's OpenAI-compatible HTTP frontend
// (DESIGN.md §5): it tokenizes a request with the model's tokenizer, asks
// the router where the prompt's KV blocks already are, forwards the request
// to the chosen worker and streams the answer back unbuffered, driving the
// router's load tracker from the stream: first token -> PrefillDone;
// finish, error or client disconnect -> Free; a worker that cannot be
// reached -> Fail and a retry on the next best worker.
//
// A /v1/completions text prompt goes to a worker as the router's token ids
// (which vLLM and the mocker accept) only when the tokenizer is the
// model's own (Config.OwnTokenizer) and the worker passed the tokenizer
// self-test (package pool: canary prompts tokenized by the router and by
// the engine's /tokenize agree); every other worker gets the client's
// body, and the ids serve the routing only.
//
// Endpoints:
//
//	POST /v1/completions, /v1/chat/completions   proxied (stream or not)
//	GET  /v1/models
//	POST /route                 decision + every candidate's cost, no proxying
//	POST /route/{id}/prefill_done, /route/{id}/free   lifecycle for tracked /route decisions
//	GET  /debug/index           per worker: blocks per tier and KV cache group, ingestion counts by reason, tokenizer self-test (admin)
//	GET  /debug/router          the router's state as text (admin)
//	GET  /metrics, /healthz, /readyz
//
// Request headers: x-session-id (session affinity), x-kvrouter-priority
// (queue priority, a number). Response headers: x-kvrouter-worker (chosen
// worker id), x-kvrouter-overlap-blocks, x-kvrouter-cached-tokens (the
// router's view of the prefix hit), x-request-id.
//
// Disaggregated prefill and decode (disagg.go, DESIGN.md §10): with
// workers of role prefill, a request the router disaggregates takes two
// hops with vLLM's NIXL proxy protocol (kv_transfer_params), or SGLang's
// PD protocol for prefill workers with a bootstrap port (sglang.go); the response
// then also carries x-kvrouter-prefill-worker and
// x-kvrouter-prefill-overlap-blocks, and the kvrouter_disagg_* metrics
// count plans, hops, TTFT phases, transferred blocks and fallbacks. The
// TTFT phases are prefill, transfer and decode_first (the first decode
// pass) when the decode engine reports its KV pull in the trailer
// X-Kvrouter-Kv-Transfer-Seconds (the mocker's extension); vLLM does not,
// so with vLLM decode_first is the transfer and first pass together.
//
// KV events (Apply, the event transports' sink) go to the event-fed index
// of their tier, flash by default (Config.Index), built with its kind's
// config in Config.Router.Index and wrapped in indexer.Concurrent
// (Config.Router.Index.Concurrent): each worker+rank's
// events are applied in order by one writer goroutine (DESIGN.md §3
// Concurrency), lookups run inline on the request goroutines. RunIndex
// runs the writers; Flush waits until everything applied so far is
// visible (readiness, /debug/index).
//
// Engines are read where every engine serves them (package pool): load, KV
// usage and cache config from Prometheus GET /metrics (vLLM and SGLang
// names), liveness of a down worker from GET /health, LoRA adapters from
// GET /v1/models. The chosen dp rank goes to the engine in
// X-data-parallel-rank. A non-streaming request is streamed from the
// engine and folded into one JSON body (unstream.go); every answer with
// usage compares the predicted cached tokens with the engine's
// (predict.go). A chat part that is not text ends the routed prompt
// (multimodal.go).
//
// Trust boundaries (DESIGN.md §12; guard.go, limits.go, bookings.go): the
// engines' transfer fields a client sends (kv_transfer_params, SGLang's
// bootstrap_*, vllm_xargs.kv_transfer_params) are stripped before any
// worker sees the request (the router's own peer-KV hint, feature
// peer-kv-hints, is added after: peerhint.go); a prefill answer's
// kv_transfer_params are checked before the decode hop; each write to a client has a deadline
// (Hardening.StreamWriteTimeout); what is buffered of an engine answer is
// bounded (Hardening.MaxAnswerBytes); tracked /route bookings are bounded
// per caller (its API key when keys are checked, else its address) and
// in total. Every store kept for outside parties is bounded in entries
// and bytes and exported as kvrouter_store_*{store}: "bookings",
// "affinity" (sessions), "tokenize_queue" (tokenizations in flight and
// their prompt text), "stream_buffers" (proxied requests and what their
// relays buffer; streambufs.go) and "lora_adapters" (names learnt from
// engines).
//
// Per request (placement.go): vLLM's cache_salt (the body field, or the
// X-Kvrouter-Cache-Salt header, which wins and is written into the
// forwarded body) salts the prompt's first block as the engine does, so
// tenants never share predicted blocks. X-Kvrouter-Pin-Worker (ID or
// ID:RANK), X-Kvrouter-DP-Ranks (LO-HI) and X-Kvrouter-Require-Labels
// (k=v,...), or /route's pin_worker, dp_ranks and labels, are hard
// placement rules that need the admin key (403 without); one that no
// worker satisfies is a 503, never another worker.
//
// Server is the proxy and composes three parts: pool (package pool: the
// workers, their polls, up and down), sink (package sink: KV events into the
// index) and, per proxied request, a flight (flight.go: its booking from
// routing to free and what it teaches); a disaggregated request's prefill
// hop books a hold (hold.go: released once, by whichever side ends it).
//
// The router books each decision and ends each flight off the request
// path (settle.go): router.Options.Deferred and FreeLater, applied by
// Run's settler goroutine, woken after each route and each end; a route
// that comes before it settles the rest itself (kvrouter_route_settled_total).
//
// A Server is safe for concurrent use. New starts nothing; Run starts the
// background loops (worker load polling, stale sweep, queue release, the
// settler, which settles what is pending once more as it stops) and
// RunIndex the index writers; internal/app's serve runtime runs both.
package frontend
