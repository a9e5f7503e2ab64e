package indexer

import (
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// stored is worker w's Stored event of blocks hs (local hash 7h), under
// parent (0: from the root).
func stored(w uint64, parent uint64, hs ...uint64) kvevents.Event {
	ev := kvevents.Event{WorkerID: w, Kind: kvevents.KindStored, HasParent: parent != 0, Parent: parent}
	for _, h := range hs {
		ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: h, Local: h * 7})
	}
	return ev
}

// applyChecked applies evs to f, checking its invariants after each.
func applyChecked(t *testing.T, f *Flash, evs []kvevents.Event) {
	t.Helper()
	for i := range evs {
		if err := f.Apply(&evs[i]); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if err := f.Check(); err != nil {
			t.Fatalf("after event %d: %v", i, err)
		}
	}
}

// storeBlocks counts a new entry's child ahead when the next block of the
// chunk will be it; a next block that turns out held (a repeated hash,
// a hash the worker holds elsewhere, a chunk boundary) must leave the
// counts exact. check verifies every child count against the tables.
func TestFlashStoreCountsChildrenAhead(t *testing.T) {
	long := make([]uint64, 3*warmSpan+5) // several chunks
	for i := range long {
		long[i] = uint64(1000 + i)
	}
	cases := []struct {
		name string
		evs  []kvevents.Event
	}{
		{"chain", []kvevents.Event{stored(1, 0, 1, 2, 3, 4)}},
		{"repeated-hash", []kvevents.Event{stored(1, 0, 1, 2, 2, 3)}},
		{"next-held-elsewhere", []kvevents.Event{stored(1, 0, 1, 2, 3), stored(1, 0, 5, 6, 2, 9)}},
		{"next-held-shared", []kvevents.Event{stored(2, 0, 1, 2, 3), stored(1, 0, 1, 2, 3, 4)}},
		{"chunks", []kvevents.Event{stored(1, 0, long...), stored(2, 0, long[:warmSpan+1]...)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := NewFlash(FlashConfig{})
			applyChecked(t, f, c.evs)
			for _, w := range []uint64{1, 2} {
				f.RemoveWorker(w)
				if err := f.Check(); err != nil {
					t.Fatalf("after removing worker %d: %v", w, err)
				}
			}
			if st := f.Stats(); st.Blocks != 0 || st.Nodes != 0 {
				t.Fatalf("left %d blocks, %d entries", st.Blocks, st.Nodes)
			}
		})
	}
}

// A Removed event's child counts stay exact however its hashes meet the
// tree: leaf-first chains, an interior block after a leaf (descendants
// dropped), siblings, shared parents, unknown hashes, yields mid-event.
func TestFlashRemoveCountsChildren(t *testing.T) {
	removed := func(w uint64, hs ...uint64) kvevents.Event {
		return kvevents.Event{WorkerID: w, Kind: kvevents.KindRemoved, Hashes: hs}
	}
	chain := make([]uint64, 2*warmSpan+3)
	rev := make([]uint64, len(chain))
	for i := range chain {
		chain[i] = uint64(100 + i)
		rev[len(chain)-1-i] = chain[i]
	}
	cases := []struct {
		name string
		evs  []kvevents.Event
	}{
		{"leaf-first", []kvevents.Event{stored(1, 0, 1, 2, 3, 4, 5, 6), removed(1, 6, 5, 4)}},
		{"interior-after-leaf", []kvevents.Event{stored(1, 0, 1, 2, 3, 4, 5, 6), removed(1, 6, 3)}},
		{"siblings", []kvevents.Event{stored(1, 0, 1, 2, 3), stored(1, 2, 7, 8), removed(1, 3, 8, 7)}},
		{"root-first", []kvevents.Event{stored(1, 0, 1, 2, 3), removed(1, 1, 3)}},
		{"shared-parent", []kvevents.Event{stored(1, 0, 1, 2, 3, 4), stored(2, 0, 1, 2, 3, 4), removed(1, 4, 3), removed(2, 4)}},
		{"unknown-hash", []kvevents.Event{stored(1, 0, 1, 2, 3), removed(1, 3, 99, 2)}},
		{"long", []kvevents.Event{stored(1, 0, chain...), removed(1, rev[:len(rev)-1]...)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := NewFlash(FlashConfig{})
			applyChecked(t, f, c.evs)
		})
	}
}
