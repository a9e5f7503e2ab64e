package indexertest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
)

// groupsRef is a naive model of indexer.Groups (DESIGN.md §13): full
// attention in a Reference, each group block kept as its whole path of
// local hashes, and the joint rule checked literally for every L.
type groupsRef struct {
	full    *Reference
	bs      int
	workers map[kvevents.Worker]*refHybrid

	applied, rejected, unknown uint64
}

type refHybrid struct {
	groups  map[uint32]*refGroup
	pending []kvevents.Event
}

type refGroup struct {
	g      kvevents.Group
	blocks map[uint64]string // engine hash -> path key
}

func pathKey(p []uint64) string { return fmt.Sprint(p) }

func (r *groupsRef) apply(ev *kvevents.Event) error {
	w := ev.Worker()
	if ev.Group.Kind == kvevents.GroupFull || (ev.Kind != kvevents.KindStored && ev.Kind != kvevents.KindRemoved) {
		err := r.full.Apply(ev)
		if hw := r.workers[w]; hw != nil {
			if ev.Kind == kvevents.KindCleared {
				for _, g := range hw.groups {
					clear(g.blocks)
				}
				hw.pending = nil
			} else if err == nil && ev.Kind == kvevents.KindStored {
				r.retry(w, hw)
			}
		}
		return err
	}
	if ev.Kind == kvevents.KindRemoved {
		r.applied++
		for _, h := range ev.Hashes {
			hw := r.workers[w]
			if hw == nil || hw.groups[ev.Group.Index] == nil {
				r.unknown++
				continue
			}
			if _, ok := hw.groups[ev.Group.Index].blocks[h]; !ok {
				r.unknown++
			}
			delete(hw.groups[ev.Group.Index].blocks, h)
		}
		return nil
	}
	if ev.HasParent && ev.Parent != 0 && slices.ContainsFunc(ev.Blocks, func(b kvevents.Block) bool { return b.Hash == ev.Parent }) {
		r.rejected++
		return indexer.ErrSelfParent
	}
	r.applied++
	hw := r.workers[w]
	if hw == nil {
		hw = &refHybrid{groups: map[uint32]*refGroup{}}
		r.workers[w] = hw
	}
	g := hw.groups[ev.Group.Index]
	if g == nil {
		g = &refGroup{g: ev.Group, blocks: map[uint64]string{}}
		hw.groups[ev.Group.Index] = g
	}
	if ev.Group.Window != 0 {
		g.g.Window = ev.Group.Window
	}
	if len(ev.Blocks) == 0 {
		return nil
	}
	if r.store(w, hw, ev) {
		r.retry(w, hw)
	} else {
		hw.pending = append(hw.pending, *ev)
	}
	return nil
}

// paths returns the path of the block w names hash.
func (r *groupsRef) path(w kvevents.Worker, hw *refHybrid, hash uint64) ([]uint64, bool) {
	for _, i := range slices.Sorted(maps.Keys(hw.groups)) {
		if k, ok := hw.groups[i].blocks[hash]; ok {
			return parseKey(k), true
		}
	}
	if held := r.full.workers[w]; held != nil {
		if _, ok := held[hash]; ok {
			return path(held, hash), true
		}
	}
	return nil, false
}

func parseKey(k string) []uint64 {
	var out []uint64
	for _, f := range strings.Fields(strings.Trim(k, "[]")) {
		var x uint64
		fmt.Sscan(f, &x)
		out = append(out, x)
	}
	return out
}

func (r *groupsRef) store(w kvevents.Worker, hw *refHybrid, ev *kvevents.Event) bool {
	var p []uint64
	if ev.HasParent && ev.Parent != 0 {
		var ok bool
		if p, ok = r.path(w, hw, ev.Parent); !ok {
			return false
		}
	}
	g := hw.groups[ev.Group.Index]
	for _, b := range ev.Blocks {
		if k, ok := g.blocks[b.Hash]; ok {
			p = parseKey(k)
			continue
		}
		p = append(slices.Clone(p), b.Local)
		g.blocks[b.Hash] = pathKey(p)
	}
	return true
}

func (r *groupsRef) retry(w kvevents.Worker, hw *refHybrid) {
	for progress := true; progress; {
		progress = false
		for i := 0; i < len(hw.pending); i++ {
			if r.store(w, hw, &hw.pending[i]) {
				hw.pending = slices.Delete(hw.pending, i, i+1)
				progress, i = true, i-1
			}
		}
	}
}

func (r *groupsRef) removeWorker(id uint64) {
	r.full.RemoveWorker(id)
	for w := range r.workers {
		if w.ID == id {
			delete(r.workers, w)
		}
	}
}

// holds reports whether g holds the block of path q.
func (g *refGroup) holds(q []uint64) bool {
	k := pathKey(q)
	for _, x := range g.blocks {
		if x == k {
			return true
		}
	}
	return false
}

// allows is the group's condition at L, checked literally.
func (g *refGroup) allows(q []uint64, l, bs int) bool {
	if l == 0 {
		return true
	}
	if g.g.Kind == kvevents.GroupState {
		return g.holds(q[:l])
	}
	lo := 0
	if g.g.Window != 0 {
		lo = max(0, l-(int(g.g.Window)-1+bs-1)/bs)
	}
	for p := lo; p < l; p++ {
		if !g.holds(q[:p+1]) {
			return false
		}
	}
	return true
}

func (r *groupsRef) matches(q []uint64) indexer.Overlaps {
	var out indexer.Overlaps
	for _, o := range r.full.FindMatches(q) {
		if hw := r.workers[o.Worker]; hw != nil {
			l := o.Blocks
			for ; l > 0; l-- {
				ok := true
				for _, g := range hw.groups {
					ok = ok && g.allows(q, l, r.bs)
				}
				if ok {
					break
				}
			}
			o.Blocks = l
		}
		if o.Blocks > 0 {
			out = append(out, o)
		}
	}
	return out
}

// RunGroupsDifferential applies n random event sequences of full,
// sliding-window and state groups to indexer.Groups over fresh inner
// indexes and to a naive model, and fails on the first difference in
// Apply's outcome, the joint match of random queries, or the counters.
func RunGroupsDifferential(t *testing.T, inner func() indexer.Index, n int) {
	t.Helper()
	for seed := range uint64(n) {
		if !runGroupsSequence(t, inner, seed) {
			return
		}
	}
}

func runGroupsSequence(t *testing.T, inner func() indexer.Index, seed uint64) bool {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x9009))
	const bs = 4
	ref := &groupsRef{full: NewReference(), bs: bs, workers: map[kvevents.Worker]*refHybrid{}}
	g := &gen{rng: rng, ref: ref.full, hmax: 4 + rng.Uint64N(30), lmax: 2 + rng.Uint64N(5)}
	idx := indexer.NewGroups(inner(), indexer.GroupsConfig{BlockSize: bs, MaxPending: 1000})
	window := uint32(1 + rng.IntN(14)) // 1 to 14 tokens: 0 to 4 blocks (B = 4)
	var log []kvevents.Event
	fail := func(format string, args ...any) bool {
		t.Errorf("seed %d after %d events (window %d):", seed, len(log), window)
		for _, ev := range log {
			t.Logf("  %v %s", ev, ev.Group)
		}
		t.Errorf(format, args...)
		return false
	}
	for range 10 + rng.IntN(80) {
		if rng.IntN(60) == 0 {
			id := 1 + rng.Uint64N(3)
			log = append(log, kvevents.Event{WorkerID: id, Kind: kvevents.Kind(100)}) // marker
			ref.removeWorker(id)
			idx.RemoveWorker(id)
		} else {
			ev := g.event()
			if ev.WorkerID != 3 && ev.Kind != kvevents.KindCleared && rng.IntN(2) == 0 {
				g.groupEvent(&ev, window, ref)
			}
			ev.DPRank = 0
			log = append(log, ev)
			e1, e2 := ref.apply(&ev), idx.Apply(&ev)
			if c1, c2 := errClass(e1), errClass(e2); c1 != c2 {
				return fail("apply %v %s: reference %s, index %s", ev, ev.Group, c1, c2)
			}
		}
		for range 4 {
			q := g.query()
			if a, b := FormatOverlaps(ref.matches(q)), FormatOverlaps(idx.FindMatches(q)); a != b {
				return fail("match %v:\nreference:\n%s\nindex:\n%s", q, a, b)
			}
		}
		if err := idx.Check(); err != nil {
			return fail("check: %v", err)
		}
	}
	st := idx.Stats()
	rs := ref.full.Stats()
	if st.Applied != rs.Applied+ref.applied || st.Rejected != rs.Rejected+ref.rejected || st.UnknownRemove != rs.UnknownRemove+ref.unknown {
		return fail("stats: index %+v, reference full %+v groups applied=%d rejected=%d unknown=%d",
			st, rs, ref.applied, ref.rejected, ref.unknown)
	}
	return true
}

// groupEvent turns a Stored or Removed event into one of group 1
// (sliding, window tokens) or 2 (state), usually over a segment of a
// chain the worker's full attention holds, so that queries hit it.
func (g *gen) groupEvent(ev *kvevents.Event, window uint32, ref *groupsRef) {
	if g.rng.IntN(2) == 0 {
		ev.Group = kvevents.Group{Index: 1, Kind: kvevents.GroupSliding, Window: window}
	} else {
		ev.Group = kvevents.Group{Index: 2, Kind: kvevents.GroupState}
	}
	w := ev.Worker()
	w.Rank = 0
	if ev.Kind == kvevents.KindRemoved {
		if ev.Group.Kind == kvevents.GroupSliding && g.rng.IntN(2) == 0 {
			ev.Group.Window = 0 // removes may omit the window
		}
		if hw := ref.workers[w]; hw != nil && hw.groups[ev.Group.Index] != nil {
			for h := range hw.groups[ev.Group.Index].blocks {
				if g.rng.IntN(3) == 0 {
					ev.Hashes = append(ev.Hashes, h)
				}
			}
		}
		return
	}
	h, ok := g.heldHash(w)
	if !ok || g.rng.IntN(6) == 0 {
		return // random blocks and parent, as drawn
	}
	held := ref.full.workers[w]
	var chain []kvevents.Block
	for x, ok := held[h], true; ok; {
		chain = append(chain, kvevents.Block{Hash: h, Local: x.local})
		if !x.hasParent {
			break
		}
		h = x.parent
		x, ok = held[h]
	}
	slices.Reverse(chain)
	i := g.rng.IntN(len(chain))
	j := i + 1 + g.rng.IntN(len(chain)-i)
	if ev.Group.Kind == kvevents.GroupState {
		j = i + 1
	}
	ev.Blocks = chain[i:j]
	ev.HasParent, ev.Parent = i > 0, 0
	if i > 0 {
		ev.Parent = chain[i-1].Hash
	}
}
