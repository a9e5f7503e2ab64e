// Package mockerd is the HTTP shell around the mocker engine core: one
// simulated vLLM worker running in real time.
//
// A single goroutine (Server.Run) owns the engine. It steps it, waits the
// modeled pass duration (already divided by the speedup ratio by the
// engine), then hands the pass's tokens to the waiting HTTP handlers and its
// KV events to the configured sinks (NATS JetStream publisher, ZMQ PUB).
// Handlers talk to the loop only through channels, so the engine needs no
// lock; requests that arrive during a pass join the next one, as in vLLM.
//
// HTTP API (vLLM-compatible where vLLM has the endpoint):
//
//	POST /v1/completions        prompt as text or token ids; stream or not
//	POST /v1/chat/completions   messages, rendered with the tokenizer's chat template
//	GET  /v1/models             the base model, and the LoRA adapters loaded (Config.MaxLoRAs; lora.go)
//	POST /tokenize              {"prompt"} or {"messages"} -> {"count","max_model_len","tokens"}
//	GET  /load                  kvrouter's load report (KV usage, active prefill tokens)
//	GET  /metrics               Prometheus, with vLLM's gauge names
//	GET  /healthz
//	POST /kv/release            {"remote_request_id"}: free a disaggregated prefill's held blocks
//
// Disaggregated prefill and decode (disagg.go, DESIGN.md §10) speak vLLM's
// NIXL-connector protocol: kv_transfer_params with do_remote_decode make a
// request a prefill hop whose blocks are held and whose answer carries the
// transfer parameters; do_remote_prefill makes it a decode hop that pulls
// those blocks over the engine's KV link (mocker.Config.KVTransfer),
// caches them (Stored events, cached_tokens) and then tells the prefill
// mocker to release them.
//
// Output tokens are dummies (mocker.OutputToken); their text is a word from
// a fixed list, one word per token. usage.prompt_tokens_details.cached_tokens
// is the prefix found in the engine's cache.
//
// A Server is safe for concurrent use; New starts nothing, Run does.
package mockerd
