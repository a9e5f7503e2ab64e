// Package indexer is the prefix index of DESIGN.md §3: which worker+rank
// holds which prefix of KV blocks, fed by KV events (kvevents) and queried
// with a prompt's local block hashes (kvhash).
//
// # Implementations
//
//   - Radix (NewRadix): a prefix tree keyed by local hash, with a
//     per-worker table engine-hash -> node for O(1) event access.
//   - Flash (NewFlash): a positional index keyed by an internal 64-bit id
//     of each prefix (a cheap chained mix over local hashes, so equal local
//     hashes under different prefixes are different entries), with jump
//     search (stride FlashConfig.Stride, default 64). Its lookups take no lock
//     and never wait for a writer (epoch-based reclamation, flashrcu.go).
//     This is the fast one: use it in production.
//   - Approx (NewApprox): the approximate TTL index for fleets without KV
//     events; the router inserts each routed request's blocks. It is not an
//     Index (it has no events) and is kept apart from the event-fed index.
//   - Concurrent (NewConcurrent): wraps any Index; FindMatches runs inline on
//     the caller's goroutine, Apply enqueues the event to one of
//     ConcurrentConfig.Writers writer goroutines chosen by worker+rank, so
//     the events of one worker+rank are applied in order by one goroutine.
//     Run(ctx) owns the goroutines; Flush(ctx) waits for everything enqueued
//     so far.
//     Each writer drains what is queued (up to 32 events or 16 blocks)
//     and applies it under one write lock.
//   - Groups (NewGroups): wraps an event-fed index with the KV cache
//     groups of hybrid models (DESIGN.md §13): the inner index keeps full
//     attention, Groups each worker's sliding-window and state groups, and
//     lookups credit the joint match. Workers without group events are
//     untouched. A plain Radix or Flash refuses a non-full group's event
//     (ErrGroupEvent). Details in Groups' doc.
//
// Radix and Flash pass the same conformance suite (indexer/indexertest,
// scripts in indexer/testdata) with byte-identical output, and a
// differential test against a naive reference model.
//
// # Semantics (identical in every Index)
//
//   - Stored attaches its blocks, as a chain, at a position fixed by the
//     "Parents" rules below. A position that cannot be determined rejects
//     the whole event (ErrUnknownParent); a parent that is one of the
//     event's own block hashes rejects it (ErrSelfParent). A block whose
//     engine hash the worker already holds is skipped and the chain continues
//     under the block the worker holds under that hash; a block the worker
//     already holds under another engine hash (same prefix, same local hash)
//     is skipped likewise. A Stored event with no blocks is a no-op.
//   - Removed: for each hash, the worker stops holding that block and every
//     descendant it holds under it (a worker's blocks are always a
//     prefix-closed set: it cannot use a block whose prefix it lost, and a
//     Dump must be replayable). An unknown hash is counted in
//     Stats.UnknownRemove and skipped. The hashes of one event are applied
//     deepest first, so evicting a whole chain in one event counts nothing
//     as unknown.
//   - Parents. An engine's block hash is a sequence hash: it names the
//     block's whole prefix, whichever worker holds it, and the event's
//     parent is a hint. The chain starts at the root when the event has no
//     parent or parent 0 (some publishers send 0 for none); else under the
//     parent when the worker holds it; else where the event's first block
//     is, when every worker holding its hash holds it at one position (same
//     local hash) and the worker holds the block before it (the parent was
//     stale, e.g. an interior block evicted and stored again naming a later
//     block); else under the parent's position, when every holder of the
//     parent's hash agrees on it and the worker holds that block under a
//     hash of its own; else nowhere: ErrUnknownParent (counted). The
//     worker's blocks stay a prefix-closed set (below): a chain under a
//     block it lacks could never count for its lookups. A refused event
//     does not poison later ones: each is placed on its own. A Sharded
//     index looks at the workers of the event's shard only. (Scripts:
//     parent-zero, parent-unknown, parent-interior-restore,
//     parent-interior-remove, parent-cross-worker.)
//   - Cleared drops everything of that worker+rank; RemoveWorker drops every
//     rank of a worker.
//   - A rejected event changes nothing (events are validated before any
//     mutation) and is counted in Stats.Rejected.
//   - FindMatches(locals) returns, per worker+rank, the number of leading
//     query blocks it holds with exactly the query's prefix, sorted by
//     worker; workers with zero overlap are absent.
//   - Dump returns one Stored event per maximal single-child chain of each
//     worker, workers in order, parents before children, EventID 0, in a
//     canonical order shared by all implementations.
//
// # Concurrency
//
// Radix, Flash and Approx are safe for concurrent use. Radix's and
// Approx's FindMatches take a read lock, writes an exclusive one. Flash's
// lookups take no lock at all: writers serialize among themselves, free
// nothing a running lookup may read (epoch-based reclamation,
// flashrcu.go), and a lookup that overlapped a write recomputes in a safe
// mode that gives each worker an overlap it had at some moment during the
// lookup (flashread.go), so a lookup concurrent with a long event may see
// a prefix of it applied. Flash's Dump, Stats and Check read under its lock,
// and a long event (more than 32 blocks or hashes) steps aside for them
// between chunks.
// FlashConfig.BlocksPerWorker and RadixConfig.BlocksPerWorker pre-size
// the per-worker tables.
//
// # Memory
//
// Radix nodes and Flash entries live in fixed-size chunks indexed by
// uint32, with free lists; a block held by one worker keeps its member
// inline and shared blocks use pooled member slices (Flash: power-of-two
// blocks of one pointer-free member arena), so storing a block allocates
// nothing amortized. With FlashConfig.BlocksPerWorker, Flash also sizes its
// prefix-id table for workers x BlocksPerWorker entries as it meets
// workers, and on linux advises it as transparent huge pages. BenchmarkBytesPerBlock reports the heap
// bytes per (worker, block) pair. Writes of one worker+rank must come
// from one goroutine at a time in event_id order (Concurrent guarantees it).
//
// The package does no I/O, reads no clock (Approx takes now as an argument)
// and starts no goroutines outside Concurrent.Run.
package indexer
