package indexer

import (
	"fmt"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Where a Stored event's chain starts (DESIGN.md §3; package doc,
// "Parents"). An engine's block hashes are sequence hashes: each names its
// whole prefix, so whichever worker holds a hash, the block sits at the
// same position. The event's parent is therefore a hint, used in this
// order:
//
//  1. no parent, or parent 0 (some publishers send 0 for "none"): the root;
//  2. the parent, when the worker holds it (the common case);
//  3. the position of the event's first block, when every worker holding
//     its hash (this one included) holds it at one position with the
//     block's local hash, and the worker holds the block before that
//     position (or it is at depth 1): the parent was stale, e.g. an
//     interior block evicted and stored again naming a later block;
//  4. the position of the parent, when every worker holding the parent's
//     hash holds it at one position and the worker holds that block under
//     another hash of its own;
//  5. otherwise ErrUnknownParent.
//
// NB: the worker's blocks stay a prefix-closed set: a chain under a block
// the worker does not hold could never count for its lookups, so it is
// refused rather than kept detached. Rules 3 and 4 scan every worker's
// table of the index, O(workers), only for events whose parent the worker
// lacks; a Sharded index applies them within the worker's shard (its
// writers must not lock other shards).

// hasParent is the event's parent with 0 read as none.
func hasParent(ev *kvevents.Event) bool { return ev.HasParent && ev.Parent != 0 }

// checkSelfParent refuses a parent that is one of the event's own blocks.
func checkSelfParent(ev *kvevents.Event) error {
	if hasParent(ev) {
		for _, b := range ev.Blocks {
			if b.Hash == ev.Parent {
				return fmt.Errorf("parent %d is one of the event's blocks: %w", ev.Parent, ErrSelfParent)
			}
		}
	}
	return nil
}

// positions abstracts an index's tree for anchorOf.
type positions[P comparable] struct {
	root P
	// own is the worker's position of h.
	own func(h uint64) (P, bool)
	// all is the one position every worker holding h holds it at (false
	// when none holds it, or they disagree).
	all func(h uint64) (P, bool)
	// parent is a position's parent (root at depth 1); local its local hash.
	parent func(p P) P
	local  func(p P) uint64
	// holds reports whether the worker holds position p.
	holds func(p P) bool
}

// anchorOf applies the rules above.
func anchorOf[P comparable](ev *kvevents.Event, x positions[P]) (P, error) {
	if !hasParent(ev) {
		return x.root, nil
	}
	if p, ok := x.own(ev.Parent); ok {
		return p, nil
	}
	if len(ev.Blocks) > 0 {
		b := ev.Blocks[0]
		if n, ok := x.all(b.Hash); ok && x.local(n) == b.Local {
			if p := x.parent(n); p == x.root || x.holds(p) {
				return p, nil
			}
		}
	}
	if p, ok := x.all(ev.Parent); ok && x.holds(p) {
		return p, nil
	}
	return x.root, fmt.Errorf("parent %d: %w", ev.Parent, ErrUnknownParent)
}

// single returns the one value every table maps h to.
func single(tables []*htable, h uint64) (uint32, bool) {
	found, ok := uint32(0), false
	for _, t := range tables {
		if t == nil {
			continue
		}
		if v, held := t.get(h); held {
			if ok && v != found {
				return 0, false
			}
			found, ok = v, true
		}
	}
	return found, ok
}

// anchor is anchorOf for a Radix (table nil: the worker holds nothing;
// slot is valid when table is not nil).
func (r *Radix) anchor(ev *kvevents.Event, table *htable, slot uint32) (uint32, error) {
	return anchorOf(ev, positions[uint32]{
		root: rootNode,
		own: func(h uint64) (uint32, bool) {
			if table == nil {
				return 0, false
			}
			return table.get(h)
		},
		all:    func(h uint64) (uint32, bool) { return single(r.tables, h) },
		parent: func(n uint32) uint32 { return r.at(n).parent },
		local:  func(n uint32) uint64 { return r.at(n).local },
		holds: func(n uint32) bool {
			if table == nil {
				return false
			}
			_, ok := r.find(r.at(n), slot)
			return ok
		},
	})
}

// anchor is anchorOf for a Flash (table nil: the worker holds nothing;
// slot is valid when table is not nil).
func (f *Flash) anchor(ev *kvevents.Event, table *htable, slot uint32) (uint32, error) {
	return anchorOf(ev, positions[uint32]{
		root: noEntry,
		own: func(h uint64) (uint32, bool) {
			if table == nil {
				return 0, false
			}
			return table.get(h)
		},
		all:    func(h uint64) (uint32, bool) { return single(f.tables, h) },
		parent: f.parent,
		local:  f.local,
		holds: func(e uint32) bool {
			if table == nil {
				return false
			}
			_, ok := f.find(f.at(e), slot)
			return ok
		},
	})
}
