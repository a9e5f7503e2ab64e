package indexer

import (
	"fmt"
	"slices"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Sharded partitions workers (by worker id: every rank of a worker lives in
// one shard) across independent indexes, each with its own lock, tables
// and memory. A worker's events touch its shard only, so writers of
// different shards never contend: behind Concurrent with as many writers
// as shards, each writer goroutine owns one shard and event application
// scales with cores instead of serializing on one write lock. A lookup
// asks every shard (each under its own read lock) and merges the results,
// so it costs about one lookup per shard; a prefix held by workers of
// several shards is stored once per shard.
//
// Measured (`kvrouter-study bench index`, conversation trace, W=64, B=64, 2
// cores, flash): events were ~95% of the replay's CPU and all of it ran
// under Flash's one write lock, so the second core idled; two shards let
// both writers apply at once.
//
// Semantics are those of the Index interface, exactly, except Stats.Nodes,
// which is the sum of the shards' distinct blocks (a block held in two
// shards counts twice) and Stats.Bytes, which includes that duplication,
// and the parent rules that place a chain by other workers' blocks (package
// doc, "Parents"), which see the workers of the event's shard only: a
// writer holding its shard's lock must not wait for another shard's (two
// writers would deadlock).
type Sharded struct {
	shards []Index
}

var _ Index = (*Sharded)(nil)

// NewSharded returns an index of n shards (n >= 1), each built by mk.
func NewSharded(n int, mk func() Index) *Sharded {
	n = max(n, 1)
	s := &Sharded{shards: make([]Index, n)}
	for i := range s.shards {
		s.shards[i] = mk()
	}
	return s
}

// Shards returns the shards, in shard order (for stats and tests).
func (s *Sharded) Shards() []Index { return s.shards }

// ShardOf returns the shard of worker id.
func (s *Sharded) ShardOf(id uint64) int {
	if len(s.shards) == 1 {
		return 0
	}
	return int(mix64(id) % uint64(len(s.shards)))
}

// mix64 is the SplitMix64 finalizer: spreads sequential ids evenly.
func mix64(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// Apply implements Index: the event goes to its worker's shard.
func (s *Sharded) Apply(ev *kvevents.Event) error {
	return s.shards[s.ShardOf(ev.WorkerID)].Apply(ev)
}

// applyBatch applies evs (Concurrent's writers): runs of one shard's
// events go to that shard's batch apply, under one lock acquisition.
func (s *Sharded) applyBatch(evs []kvevents.Event, errs []error) {
	for i := 0; i < len(evs); {
		k := s.ShardOf(evs[i].WorkerID)
		j := i + 1
		for j < len(evs) && s.ShardOf(evs[j].WorkerID) == k {
			j++
		}
		if ba, ok := s.shards[k].(batchApplier); ok {
			ba.applyBatch(evs[i:j], errs[i:j])
		} else {
			for x := i; x < j; x++ {
				errs[x] = s.shards[k].Apply(&evs[x])
			}
		}
		i = j
	}
}

// FindMatches implements Index.
func (s *Sharded) FindMatches(locals []uint64) Overlaps { return s.AppendMatches(nil, locals) }

// AppendMatches appends the FindMatches result to dst: every shard's,
// merged by worker. It does not allocate when the shards do not and dst
// has room.
func (s *Sharded) AppendMatches(dst Overlaps, locals []uint64) Overlaps {
	return s.AppendMatchesIDs(dst, locals, nil)
}

// AppendMatchesIDs implements IDMatchAppender: each shard's, for shards
// that read ids.
func (s *Sharded) AppendMatchesIDs(dst Overlaps, locals, ids []uint64) Overlaps {
	base := len(dst)
	for k, sh := range s.shards {
		mid := len(dst)
		if a, ok := sh.(IDMatchAppender); ok && ids != nil {
			dst = a.AppendMatchesIDs(dst, locals, ids)
		} else if a, ok := sh.(interface {
			AppendMatches(Overlaps, []uint64) Overlaps
		}); ok {
			dst = a.AppendMatches(dst, locals)
		} else {
			dst = append(dst, sh.FindMatches(locals)...)
		}
		if k > 0 {
			mergeOverlaps(dst[base:], mid-base)
		}
	}
	return dst
}

// WantsIDs implements IDMatchAppender: whether any shard reads the ids.
func (s *Sharded) WantsIDs() bool {
	for _, sh := range s.shards {
		if a, ok := sh.(IDMatchAppender); ok && a.WantsIDs() {
			return true
		}
	}
	return false
}

// mergeStack bounds the stack buffer of mergeOverlaps.
const mergeStack = 64

// mergeOverlaps sorts o, whose parts o[:mid] and o[mid:] are each sorted
// by worker (a sort of the whole, as before, was 3% of a trace replay's
// CPU). The smaller part is copied aside and merged from its end.
func mergeOverlaps(o Overlaps, mid int) {
	if mid == 0 || mid == len(o) || cmpOverlap(o[mid-1], o[mid]) <= 0 {
		return
	}
	// Go zeroes a stack array where it is declared: the half-size one
	// spares the usual two-shard merge (the smaller part at most half the
	// workers) half of that: 64 overlaps split 30/34, 272 -> 224 ns with
	// the smaller part first, 242 -> 218 ns second (a copy to restore the
	// parts included; medians of 7 alternated runs pinned to CPU 1).
	switch n := min(mid, len(o)-mid); {
	case n > mergeStack:
		sortOverlaps(o)
	case n <= mergeStack/2:
		var buf [mergeStack / 2]Overlap
		mergeParts(o, mid, buf[:])
	default:
		var buf [mergeStack]Overlap
		mergeParts(o, mid, buf[:])
	}
}

// mergeParts is mergeOverlaps with buf, room for the smaller part.
func mergeParts(o Overlaps, mid int, buf []Overlap) {
	if mid <= len(o)-mid {
		a := buf[:copy(buf, o[:mid])]
		// Front to back: the write index never passes the read index of
		// the second part.
		i, j, w := 0, mid, 0
		for i < len(a) && j < len(o) {
			if cmpOverlap(o[j], a[i]) < 0 {
				o[w] = o[j]
				j++
			} else {
				o[w] = a[i]
				i++
			}
			w++
		}
		copy(o[w:], a[i:])
		return
	}
	b := buf[:copy(buf, o[mid:])]
	// Back to front: the write index never passes the read index of the
	// first part; on a tie the first part's overlap stays first.
	i, j, w := mid-1, len(b)-1, len(o)-1
	for i >= 0 && j >= 0 {
		if cmpOverlap(b[j], o[i]) < 0 {
			o[w] = o[i]
			i--
		} else {
			o[w] = b[j]
			j--
		}
		w--
	}
	copy(o[:j+1], b[:j+1])
}

// RemoveWorker implements Index.
func (s *Sharded) RemoveWorker(id uint64) { s.shards[s.ShardOf(id)].RemoveWorker(id) }

// Dump implements Index: the shards' dumps merged by worker, like a single
// index's (a stable sort: each worker's events keep their order).
func (s *Sharded) Dump() []kvevents.Event {
	var out []kvevents.Event
	for _, sh := range s.shards {
		out = append(out, sh.Dump()...)
	}
	slices.SortStableFunc(out, func(a, b kvevents.Event) int { return a.Worker().Compare(b.Worker()) })
	return out
}

// Stats implements Index: the sum over shards (see the type's doc for
// Nodes and Bytes).
func (s *Sharded) Stats() Stats {
	var t Stats
	for _, sh := range s.shards {
		x := sh.Stats()
		t.Blocks += x.Blocks
		t.Nodes += x.Nodes
		t.Workers += x.Workers
		t.Bytes += x.Bytes
		t.Applied += x.Applied
		t.Rejected += x.Rejected
		t.UnknownRemove += x.UnknownRemove
		t.Queued += x.Queued
		t.SafeStarted += x.SafeStarted
		t.SafeRedone += x.SafeRedone
	}
	return t
}

// String names the shards, e.g. "2 shards of *indexer.Flash".
func (s *Sharded) String() string {
	return fmt.Sprintf("%d shards of %T", len(s.shards), s.shards[0])
}

// shardQueues is implemented by Sharded: Concurrent with one writer per
// shard pins each shard to one writer.
func (s *Sharded) shardQueues() (n int, of func(kvevents.Worker) int) {
	return len(s.shards), func(w kvevents.Worker) int { return s.ShardOf(w.ID) }
}
