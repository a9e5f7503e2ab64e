package indexer

import (
	"fmt"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Where a Stored event's chain starts (DESIGN.md §3; package doc,
// "Parents"). The event's parent is a hint, used in this order:
//
//  1. no parent, or parent 0 (some publishers send 0 for "none"): the root;
//  2. the parent, when the worker holds it (the common case);
//  3. the position of the event's first block, when the worker holds that
//     block (with the block's local hash): an engine hash is a sequence
//     hash, it names its whole prefix, so a block the worker holds is
//     where it is whatever parent the event names (a stale parent, e.g.
//     after an interior eviction);
//  4. otherwise ErrUnknownParent.
//
// NB: rule 3 does not look at other workers' blocks, although a sequence
// hash held by any worker would place the block too: the worker's blocks
// are a prefix-closed set, so a chain under a block the worker does not
// hold could never count for its lookups and is refused either way; and a
// Sharded index keeps other workers in other shards, whose locks a writer
// must not take (two writers would deadlock), so the answer would depend
// on the sharding.

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

// anchorOf applies the rules above: own returns the worker's position of
// a hash, parentOf a position's parent (root at depth 1) and localOf its
// local hash.
func anchorOf[P comparable](ev *kvevents.Event, root P, own func(h uint64) (P, bool),
	parentOf func(p P) P, localOf func(p P) uint64) (P, error) {
	if !hasParent(ev) {
		return root, nil
	}
	if p, ok := own(ev.Parent); ok {
		return p, nil
	}
	if len(ev.Blocks) > 0 {
		b := ev.Blocks[0]
		if n, ok := own(b.Hash); ok && localOf(n) == b.Local {
			return parentOf(n), nil
		}
	}
	return root, fmt.Errorf("parent %d: %w", ev.Parent, ErrUnknownParent)
}

// anchor is anchorOf for a Radix (table nil: the worker holds nothing).
func (r *Radix) anchor(ev *kvevents.Event, table *htable) (uint32, error) {
	return anchorOf(ev, rootNode,
		func(h uint64) (uint32, bool) {
			if table == nil {
				return 0, false
			}
			return table.get(h)
		},
		func(n uint32) uint32 { return r.at(n).parent },
		func(n uint32) uint64 { return r.at(n).local })
}

// anchor is anchorOf for a Flash (table nil: the worker holds nothing).
func (f *Flash) anchor(ev *kvevents.Event, table *htable) (uint32, error) {
	return anchorOf(ev, noEntry,
		func(h uint64) (uint32, bool) {
			if table == nil {
				return 0, false
			}
			return table.get(h)
		},
		func(e uint32) uint32 { return f.at(e).parent },
		func(e uint32) uint64 { return f.local(f.at(e)) })
}
