// Package loads tracks the active load of every worker+rank from routing
// decisions and request lifecycle (DESIGN.md §4), never from guesses.
//
// A request enters with Add when it is routed: its prompt blocks (router
// sequence hashes) join the worker's active block set, reference-counted so a
// block shared by several active requests on that worker counts once, and its
// uncached prompt tokens (isl - cached_tokens) join the worker's active
// prefill tokens. PrefillDone (first output token) moves the request out of
// prefill; its blocks stay as decode load. Free (finish, error, cancel)
// releases everything. Sweep releases requests that made no progress for
// Config.StaleAfter (default 5 min) so lost completions cannot leak load.
//
// Each slot also dates its forward pass in flight (Pass, pass.go): a
// request added to an idle worker starts one with its prefill tokens, a
// first token ends one and the next starts with every prefill token then
// pending. Requests added since wait for a later pass. The time cost
// rolls the passes forward from there (selector Config.PassModel).
//
// Because every request adds the whole chain seq[0..n-1] of its prompt, the
// active block set of a worker is prefix-closed: if seq[i] is active then so
// is seq[0..i]. NewBlocks uses this to count a candidate's new blocks with a
// binary search (O(log n) lookups instead of n).
//
// Layout (for speed; DESIGN.md §4 hot path): every worker+rank has a dense
// slot (Slot, LoadAt), and the active blocks of all workers share one index
// from sequence hash to the slots holding it with their reference counts.
// Because every active set is prefix-closed, the holders of seq[i+1] are a
// subset of those of seq[i], so NewBlocksBySlot answers for all workers with
// one walk down the prompt that stops at the first block nobody holds.
// Released requests and blocks nobody holds are kept for reuse (once they
// outnumber the live ones, blocks are collected a few per Free, so no Free
// pays for a whole collection), so steady-state Add and Free do not
// allocate and Free does no hash lookups.
//
// Replicas (DESIGN.md §9): an Entry carries its Origin, "" for this router
// and another replica's id for a booking learnt through load sync. Remote
// bookings count in Load exactly like local ones; RemoveOrigin drops a
// silent replica's bookings and Breakdown splits each worker's load into
// its local and remote parts for a debug view.
//
// Invariant: per-worker counters are never negative and equal the sums over
// that worker's active requests (checked under internal/invariants.Enabled).
//
// The package is pure: time enters as a time.Time, nothing reads a clock,
// starts goroutines or logs. A Tracker is NOT safe for concurrent use; the
// router serializes access to it.
package loads
