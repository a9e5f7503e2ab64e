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
// doc's rules): the root without a parent (0 reads as none); the parent
// when w holds it; else, when w holds the first block with its local
// hash, that block's parent; else the parent is unknown.
func (r *Reference) anchor(w kvevents.Worker, ev *kvevents.Event, hasParent bool) (uint64, bool, error) {
	held := r.workers[w]
	if !hasParent {
		return 0, false, nil
	}
	if _, ok := held[ev.Parent]; ok {
		return ev.Parent, true, nil
	}
	if len(ev.Blocks) > 0 {
		if x, ok := held[ev.Blocks[0].Hash]; ok && x.local == ev.Blocks[0].Local {
			return x.parent, x.hasParent, nil
		}
	}
	return 0, false, indexer.ErrUnknownParent
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
