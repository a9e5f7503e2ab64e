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
// A registration is one instance's (Worker.Epoch, fresh at each process
// start). A new epoch at the registered URL supersedes the old one at once
// (a restart: two live processes cannot listen on one address); a new
// epoch at another URL while the holder is live is a second instance.
// Keepalive creates the key, or takes over an entry it supersedes; it
// never writes over a second live instance's entry (ErrDuplicate: it
// waits, and takes the id once the holder leaves or its entry expires)
// and, leaving, deletes its entry only if it still holds it
// (compare-and-delete on the revision). Watch keeps the member it has:
// a second instance's registration for a member heard from within the TTL
// is refused (reason "duplicate", Fleet.Duplicates) instead of flipping
// the member, whose index entries every flip cleared; once the member is
// silent for the TTL the newcomer joins. A registration without an epoch
// (older workers) matches any: it registers and leaves as before.
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
