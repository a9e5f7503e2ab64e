package indexertest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
)

// Reference is a deliberately naive indexer.Index: per worker a map of the
// blocks it holds, and FindMatches walks each worker's blocks one by one.
// It states the DESIGN.md §3 semantics as plainly as possible so fast
// implementations can be checked against it. Not safe for concurrent use.
type Reference struct {
	workers                    map[kvevents.Worker]map[uint64]refBlock
	applied, rejected, unknown uint64
	// same reports whether two worker ids share an index shard (the
	// parent rules look at other workers of the shard only); nil: one
	// shard.
	same func(a, b uint64) bool
}

type refBlock struct {
	parent    uint64
	hasParent bool
	local     uint64
}

var _ indexer.Index = (*Reference)(nil)

// NewReference returns an empty reference index.
func NewReference() *Reference {
	return &Reference{workers: map[kvevents.Worker]map[uint64]refBlock{}}
}

// NewShardedReference is the reference of an indexer.Sharded index whose
// workers a and b share a shard when same(a, b).
func NewShardedReference(same func(a, b uint64) bool) *Reference {
	r := NewReference()
	r.same = same
	return r
}

// Apply implements indexer.Index.
func (r *Reference) Apply(ev *kvevents.Event) error {
	err := r.apply(ev)
	if err != nil {
		r.rejected++
		return fmt.Errorf("reference: %w", err)
	}
	r.applied++
	return nil
}

func (r *Reference) apply(ev *kvevents.Event) error {
	w := ev.Worker()
	held := r.workers[w]
	if ev.Kind != kvevents.KindCleared && ev.Group.Kind != kvevents.GroupFull {
		return indexer.ErrGroupEvent // full attention only (DESIGN.md §13)
	}
	switch ev.Kind {
	case kvevents.KindStored:
		hasParent := ev.HasParent && ev.Parent != 0 // parent 0 reads as none
		if hasParent {
			for _, b := range ev.Blocks {
				if b.Hash == ev.Parent {
					return indexer.ErrSelfParent
				}
			}
		}
		cur, hasCur, err := r.anchor(w, ev, hasParent)
		if err != nil {
			return err
		}
		if len(ev.Blocks) == 0 {
			return nil
		}
		if held == nil {
			held = map[uint64]refBlock{}
			r.workers[w] = held
		}
	blocks:
		for _, b := range ev.Blocks {
			if _, ok := held[b.Hash]; ok {
				cur, hasCur = b.Hash, true
				continue
			}
			// Same block (same parent, same local) held under another hash?
			for h, x := range held {
				if x.hasParent == hasCur && (!hasCur || x.parent == cur) && x.local == b.Local {
					cur, hasCur = h, true
					continue blocks
				}
			}
			held[b.Hash] = refBlock{parent: cur, hasParent: hasCur, local: b.Local}
			cur, hasCur = b.Hash, true
		}
	case kvevents.KindRemoved:
		seen := map[uint64]bool{}
		var doomed []uint64
		for _, h := range ev.Hashes {
			if _, ok := held[h]; !ok || seen[h] {
				r.unknown++
				continue
			}
			seen[h] = true
			doomed = append(doomed, h)
		}
		// Drop each doomed block and everything below it.
		for changed := true; changed; {
			changed = false
			for h, x := range held {
				if seen[h] || (x.hasParent && seen[x.parent]) {
					if !seen[h] {
						seen[h] = true
					}
					delete(held, h)
					changed = true
				}
			}
		}
		if len(held) == 0 {
			delete(r.workers, w)
		}
	case kvevents.KindCleared:
		delete(r.workers, w)
	default:
		return indexer.ErrBadEvent
	}
	return nil
}

// anchor is where w's chain of a Stored event starts (the indexer package
// doc's rules, stated on paths of local hashes): the root without a parent
// (0 reads as none); the parent when w holds it; else the position of the
// first block when every worker holding its hash holds it at one path
// ending in the block's local, and w holds the path before it (or it is at
// depth 1); else the parent's position when every holder agrees on it and
// w holds that path.
func (r *Reference) anchor(w kvevents.Worker, ev *kvevents.Event, hasParent bool) (uint64, bool, error) {
	if !hasParent {
		return 0, false, nil
	}
	if _, ok := r.workers[w][ev.Parent]; ok {
		return ev.Parent, true, nil
	}
	if len(ev.Blocks) > 0 {
		b := ev.Blocks[0]
		if p, ok := r.position(w, b.Hash); ok && p[len(p)-1] == b.Local {
			if len(p) == 1 {
				return 0, false, nil
			}
			if h, ok := r.heldAt(w, p[:len(p)-1]); ok {
				return h, true, nil
			}
		}
	}
	if p, ok := r.position(w, ev.Parent); ok {
		if h, ok := r.heldAt(w, p); ok {
			return h, true, nil
		}
	}
	return 0, false, indexer.ErrUnknownParent
}

// path is the locals from the root to block h of held.
func path(held map[uint64]refBlock, h uint64) []uint64 {
	var p []uint64
	for x, ok := held[h]; ok; x, ok = held[x.parent] {
		p = append(p, x.local)
		if !x.hasParent {
			break
		}
	}
	slices.Reverse(p)
	return p
}

// position is the one path at which every worker of w's shard holding h
// holds it.
func (r *Reference) position(w kvevents.Worker, h uint64) ([]uint64, bool) {
	var found []uint64
	for o, held := range r.workers {
		if r.same != nil && !r.same(w.ID, o.ID) {
			continue
		}
		if _, ok := held[h]; !ok {
			continue
		}
		p := path(held, h)
		if found != nil && !slices.Equal(found, p) {
			return nil, false
		}
		found = p
	}
	return found, found != nil
}

// heldAt returns the hash under which w holds the block at path p.
func (r *Reference) heldAt(w kvevents.Worker, p []uint64) (uint64, bool) {
	for h := range r.workers[w] {
		if slices.Equal(path(r.workers[w], h), p) {
			return h, true
		}
	}
	return 0, false
}

// RemoveWorker implements indexer.Index.
func (r *Reference) RemoveWorker(id uint64) {
	for w := range r.workers {
		if w.ID == id {
			delete(r.workers, w)
		}
	}
}

// FindMatches implements indexer.Index.
func (r *Reference) FindMatches(locals []uint64) indexer.Overlaps {
	var out indexer.Overlaps
	for w, held := range r.workers {
		n := 0
		var cur uint64
		for i, l := range locals {
			found := false
			for h, x := range held {
				if x.local == l && x.hasParent == (i > 0) && (i == 0 || x.parent == cur) {
					cur, found = h, true
					break
				}
			}
			if !found {
				break
			}
			n++
		}
		if n > 0 {
			out = append(out, indexer.Overlap{Worker: w, Blocks: n})
		}
	}
	slices.SortFunc(out, func(a, b indexer.Overlap) int {
		return cmp.Or(cmp.Compare(a.Worker.ID, b.Worker.ID), cmp.Compare(a.Worker.Rank, b.Worker.Rank))
	})
	return out
}

// Dump implements indexer.Index: per worker in order, a pre-order walk with
// children in engine-hash order, one event per maximal single-child chain.
func (r *Reference) Dump() []kvevents.Event {
	var out []kvevents.Event
	for _, w := range r.sortedWorkers() {
		held := r.workers[w]
		kids := func(parent uint64, hasParent bool) []uint64 {
			var ks []uint64
			for h, x := range held {
				if x.hasParent == hasParent && (!hasParent || x.parent == parent) {
					ks = append(ks, h)
				}
			}
			slices.Sort(ks)
			return ks
		}
		var walk func(h uint64)
		walk = func(h uint64) {
			x := held[h]
			ev := kvevents.Event{WorkerID: w.ID, DPRank: w.Rank, Kind: kvevents.KindStored, HasParent: x.hasParent, Parent: x.parent}
			for {
				ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: h, Local: held[h].local})
				ks := kids(h, true)
				if len(ks) != 1 {
					out = append(out, ev)
					for _, k := range ks {
						walk(k)
					}
					return
				}
				h = ks[0]
			}
		}
		for _, h := range kids(0, false) {
			walk(h)
		}
	}
	return out
}

func (r *Reference) sortedWorkers() []kvevents.Worker {
	var ws []kvevents.Worker
	for w := range r.workers {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b kvevents.Worker) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Rank, b.Rank))
	})
	return ws
}

// Stats implements indexer.Index. Nodes counts distinct local-hash paths;
// Bytes is not modelled.
func (r *Reference) Stats() indexer.Stats {
	s := indexer.Stats{Applied: r.applied, Rejected: r.rejected, UnknownRemove: r.unknown}
	paths := map[string]bool{}
	for _, held := range r.workers {
		s.Workers++
		for h := range held {
			s.Blocks++
			var p []string
			for x, ok := held[h], true; ok; {
				p = append(p, fmt.Sprint(x.local))
				if !x.hasParent {
					break
				}
				x, ok = held[x.parent]
			}
			paths[strings.Join(p, "/")] = true
		}
	}
	s.Nodes = len(paths)
	return s
}
