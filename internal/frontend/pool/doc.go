// Package pool is the frontend's engine membership: the workers it
// proxies to, which of them are up, and what polling their engines
// teaches (DESIGN.md §5).
//
// A Pool keeps a router's worker list in step (FleetRouter): Add, Join,
// Remove and Leave register and drop workers; MarkDown takes an
// unreachable one out of routing, and Run's polls bring it back when its
// /health answers. Each poll (Run, or Poll for a caller that drives the
// clock) reads an engine's /metrics for its per-rank KV usage, block size
// and capacity (a block size other than the router's refuses the
// worker), its /v1/models for LoRA adapters (LoRA), and an SGLang
// engine's /get_server_info for its batch budget; after each round it
// self-tests the engines' tokenizers against the router's (SelfTest,
// ForwardIDs: token ids are forwarded only to a worker that matched).
// The proxy reads it: Get, Candidates, At, ForwardIDs, LoRA.
//
// Its series (kvrouter_worker_down_total, kvrouter_workers_refused_total,
// kvrouter_worker_health_probes_total, kvrouter_tokenizer_selftest_total,
// kvrouter_worker_kv_usage, kvrouter_worker_active_prefill_tokens) and the
// bounded store "lora_adapters" are registered on Config.Registry by New.
//
// Invariant: between calls, a worker is in the router's list exactly
// when it is registered here and not down.
//
// New starts nothing; Run polls until its context is done. A Pool is safe
// for concurrent use.
package pool
