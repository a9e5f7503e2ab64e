// Package benchindex is the library behind `kvrouter-study bench index`: the
// index benchmark of DESIGN.md §8, done Dynamo's way.
//
// The method, in four steps:
//
//  1. Load a Mooncake trace and split its requests across W simulated
//     workers with a seeded random partition.
//  2. Run each worker's share through its own mocker engine on simulated
//     time (speedup 0: no sleeping), collecting the real KV event stream
//     with simulated timestamps. The stream is generated once per process
//     and kept in memory only.
//  3. Merge every worker's events and every request (as a lookup of the
//     local hashes of its prompt) onto one timeline, ordered by time, then
//     worker, then lookups before events, then sequence (see Merge).
//  4. Replay the timeline, compressed into a replay window, against an
//     index behind the concurrent wrapper: reader goroutines own a fixed
//     set of workers each, issue that worker's lookups inline (timed) and
//     hand its events to the wrapper's sticky writers in event-id order.
//
// Figures follow DESIGN.md §8: ops/s = (lookups + events) / wall seconds and
// block ops/s = (requested blocks + blocks in Stored events + hashes in
// Removed events) / wall seconds, a Cleared event being one op with zero
// blocks; the wall clock stops when the last reader has issued its last
// entry. Events still queued in the writers at that instant are counted; a
// run that leaves more than 5% of its events queued is marked invalid (the
// index looked fast only because it had not applied the events yet).
//
// Geometry. The default block size is 64 tokens (the engine default of
// DESIGN.md §6) and a trace hash id becomes 512 tokens (trace.Tokens with
// trace.TraceBlockTokens), so every prompt keeps its recorded length: a
// request is input_length/64 query blocks, 8 per trace id (equal local
// hashes, told apart by position and the sequence-hash chain), and the
// mocker's 16384-block KV cache really fills and evicts (about a third of
// the events are Removed on the conversation trace at W=64). Block size 512
// gives one block per trace id: the geometry of Dynamo's published
// mooncake bench, with 8x fewer, 8x longer blocks and no evictions.
//
// Sustained rate (the reference's definition, DESIGN.md §8): a paced replay
// compresses the timeline into a window, offering block ops / window; it is
// valid if every operation is issued within 1.01x the window and it keeps
// up if all of it completes (events applied) within 1.10x. FindSustained
// brackets the highest such rate from an unpaced replay's capacity and
// bisects until the bracket is within 5%; Run repeats that (Config.Repeat)
// and reports the spread. The trace's own replay is short (~0.1 s at 20M
// block ops/s on the conversation trace), so Scale duplicates it and
// lengthens its prompts until one replay lasts seconds.
//
// Lookups with no writers (IdleLookups, on by default in auto mode): the
// same lookups replayed alone, unpaced on one reader, against an index
// preloaded with every event of the stream. It separates what a lookup
// costs on a realistic index state from what concurrent writers add.
// The wall times come from a pass with no other clock; thread CPU is timed
// in a second pass (its system calls flush the TLB on the test VM). A
// stall probe before them (ProbeStalls) measures how often the machine
// itself takes the CPU from a running thread: a lookup's chance of
// overlapping such a stall is its length times their rate, and above 1%
// the p99 is the stall's length.
//
// Replay, Merge and the report math are deterministic given their inputs
// and are tested with synthetic streams; generation needs the trace and
// mocker packages. Nothing here is safe for concurrent use unless stated.
package benchindex
