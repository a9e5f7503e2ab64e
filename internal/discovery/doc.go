// Package discovery tells the router which workers exist.
//
// Two sources, merged by Fleet:
//   - Registry: workers register in a NATS KV bucket (Worker as JSON under
//     key "w.<id>") with a TTL kept alive by a heartbeat (Registry.Keepalive);
//     Registry.Watch reports joins and leaves (a deleted key, or an entry not
//     refreshed within the TTL, confirmed by reading the bucket: a watch
//     whose NATS server died can go silent, and is then restarted).
//   - Static: a YAML file (LoadStatic, unknown keys rejected) or repeatable
//     --worker flags (ParseWorkerFlag) for fleets without registration.
//
// A registration may describe its engine (optional fields, left out when
// unknown): total_kv_blocks, max_num_batched_tokens and max_num_seqs feed
// the router's cost model; a router that predates a field ignores it.
//
// A worker whose block size differs from the router's is refused with
// ErrBlockSize and counted (silent zero overlap is the most common failure
// of KV routers). A worker that leaves triggers Membership.Leave, where the
// router removes it from the index and the load tracker.
//
// Registry and Fleet are safe for concurrent use; constructors start no
// goroutines; Keepalive and Watch run until ctx is done.
package discovery
