// Package trace reads Mooncake request traces and turns them into token
// prompts for the mocker, the fleet simulator and the index benchmark
// (DESIGN.md §8).
//
// # Format
//
// JSON Lines, one request a line:
//
//	{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]}
//
// timestamp is the arrival in milliseconds from the start of the trace;
// hash_ids[i] names trace block i (TraceBlockTokens = 512 tokens) together
// with everything before it, so equal ids mean equal content and prefix.
// Reader autodetects gzip by its magic bytes, skips blank lines, and reports
// bad lines with their line number.
//
// # Token synthesis
//
// The trace carries no tokens. Tokens builds a prompt the way Dynamo's
// benchmarks do: hash id h becomes tokensPerID copies of uint32(h), and the
// prompt is cut at input_length. kvrouter uses tokensPerID =
// TraceBlockTokens (512), so a prompt has exactly input_length tokens and,
// at a router block size B dividing 512, each trace block becomes 512/B
// router blocks with equal tokens (equal local hashes; the sequence-hash
// chain tells them apart). Two requests then share k*512/B router blocks
// exactly when they share k trace ids, which is the trace's own reuse. A B
// that does not divide 512 still works: a router block straddling two trace
// blocks mixes both ids and is shared exactly when both are. Passing
// tokensPerID = B instead reproduces Dynamo's older mooncake bench, one router
// block per hash id (the prompt is then len(hash_ids)*B tokens, capped at
// input_length).
//
// # Transforms
//
// ScaleLength (each trace block becomes k blocks, Dynamo's
// trace_length_factor), Duplicate (k copies of the trace in disjoint hash-id
// spaces, Dynamo's trace_duplication_factor), ScaleTime and RescaleSpan
// (timestamps), and Partition (a seeded random split across W workers). All
// return new slices and leave their input unchanged.
//
// Nothing in the package keeps global state; a Reader is not safe for
// concurrent use, the functions are.
package trace
