// Package replay drives a Mooncake trace against any OpenAI-compatible
// endpoint over real HTTP and measures what a client sees (DESIGN.md §8,
// routing benchmark).
//
// Each trace record becomes one streamed /v1/completions request whose
// prompt is the synthesized token ids of trace.Tokens (hash id h = 512
// copies of uint32(h)), so equal hash ids mean equal prefixes for the
// engine's prefix cache. Requests are sent at the times a Pacer gives:
// Unpaced (all at once, bounded by Config.Concurrency), Recorded (the
// trace's timestamps divided by a speed factor), FixedRate or Poisson
// (seeded exponential gaps; BenchFrontend's arrivals). The Report
// has TTFT, ITL and end-to-end percentiles, throughput, errors, the
// workers' reported cache hits (usage.prompt_tokens_details.cached_tokens)
// and, against kvrouter, the router's hit rate read from its /metrics.
//
// Compare runs one fresh in-process fleet (internal/fleet) per routing
// policy and replays the same trace against each, back to back.
//
// Run is safe to call concurrently with different configs.
package replay
