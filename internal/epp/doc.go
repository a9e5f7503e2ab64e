// Package epp is `kvrouter-epp`: the router as the Endpoint Picker of a
// Gateway API Inference Extension InferencePool, serving Envoy's external
// processing protocol (envoy.service.ext_proc.v3.ExternalProcessor).
//
// Protocol (gateway-api-inference-extension, proposal 004 "Endpoint
// Picker Protocol", version 1.0.0):
//
//   - The pick is the header x-gateway-destination-endpoint: <ip:port>
//     and the same value under dynamic metadata envoy.lb /
//     x-gateway-destination-endpoint (never two different values).
//   - A subset hint in the request's filter metadata
//     (envoy.lb.subset_hint / x-gateway-destination-endpoint-subset, a
//     list of ip:port) restricts the pick; an empty list, or one naming
//     no known worker, is an ImmediateResponse 503. Nothing eligible is a
//     503 too; every worker over its busy thresholds is a 429 (the
//     protocol's "request should be dropped").
//   - Placement in the request's filter metadata (kvrouter.placement:
//     pin_worker "ID" or "ID:RANK", dp_ranks "LO-HI", labels "k=v,..."
//     or a struct) is the gateway's own and needs no key; the client
//     headers X-Kvrouter-Pin-Worker, ... need the admin key. A rule no
//     worker satisfies is an ImmediateResponse 503; a malformed one 400.
//   - Body modes: FULL_DUPLEX_STREAMED (the extension's gateways): Envoy
//     streams the body without waiting; the picker holds the answer to
//     the request headers until the body is complete (Envoy picks the
//     upstream when the headers are answered), answers them with the
//     pick, then streams the body back. BUFFERED (and STREAMED): the
//     headers are answered at once, the pick rides on the body's answer
//     (a completions text prompt rewritten to token ids replaces the
//     body, content-length updated). A request without a body is picked
//     at its headers by load alone. Envoy names the modes in
//     protocol_config on each stream's first message; without it,
//     ProtocolConfig.RequestBodyMode is assumed.
//   - Response phase: the first response body chunk marks the prefill
//     done, the end of the body (or trailers) frees the request, and so
//     does a stream that ends early (a reset, a broken upstream). The
//     served endpoint Envoy reports (envoy.lb /
//     x-gateway-destination-endpoint-served) is checked against the pick.
//   - Fallbacks (ProtocolConfig.Fallbacks, --fallbacks; default none):
//     the destination lists the pick then the next cheapest workers,
//     "ip:port,ip:port,...", for a proxy that retries down the list; when
//     it reports a fallback as served, the request's load moves there
//     (frontend.Picked.ServedBy).
//   - gRPC health (grpc.health.v1): "liveness" always SERVING; "",
//     "readiness" and envoy.service.ext_proc.v3.ExternalProcessor SERVING
//     once the index caught up, the pool synced and a worker is known.
//
// Bounds (the picker's messages are input from outside):
//
//   - A request body is accumulated up to serve's --max-body-bytes
//     (default 8 MiB); one byte more is an ImmediateResponse 413 and the
//     body read so far is dropped. At most --max-bodies (default 512)
//     bodies are read at once; beyond, 503. Both are the bounds store
//     epp_request_bodies (kvrouter_store_*). One gRPC message may be
//     --max-body-bytes plus 1 MiB (a BUFFERED body comes whole), at least
//     gRPC's 4 MiB.
//   - Request headers beyond MaxHeaderBytes (1 MiB) are a 431.
//   - A client's own kv_transfer_params (vLLM's disaggregation
//     parameters: pull KV blocks from the host it names, or hold blocks
//     for a pull) is refused with 400, whatever the body mode: only the
//     serving stack sets it, and refusing works in every mode where a
//     rewrite could not (in STREAMED mode the earlier chunks have gone
//     upstream when the last arrives); a client learns at once that its
//     parameters are not honored. A null value passes (engines read it as
//     absent).
//   - An answer is parsed for its token count and usage with at most
//     frontend.MaxResponseLine (1 MiB) carried over per SSE line, or 1 MiB
//     of a JSON answer; beyond, parsing is given up for that stream
//     (kvrouter_epp_answers_unparsed_total) and the body still passes
//     through unchanged. The bounds store epp_answer_buffers shows what
//     the open streams hold.
//
// Routing is the frontend's (internal/frontend.Server.Pick): the same
// parsing, tokenizer, router core, queue, session affinity
// (X-Session-Id) and priority (X-Kvrouter-Priority) as `kvrouter serve`.
// The runtime (Run) wraps serve's (app.Serve: event plane, static and
// NATS workers, the HTTP side with /metrics) and adds the gRPC server and
// the InferencePool's pod discovery (internal/k8s).
//
// Server is safe for concurrent use: each ext_proc stream (one HTTP
// request) runs on its own gRPC goroutine.
package epp
