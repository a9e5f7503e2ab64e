package indexertest

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
)

// RunDifferential applies n random event sequences (seeded, reproducible)
// to fresh indexes from newIndex and to a Reference, and fails on the first
// difference in Apply's outcome, FindMatches for random queries, Stats
// (blocks, nodes, workers, counters) or Dump.
func RunDifferential(t *testing.T, newIndex func() indexer.Index, n int) {
	t.Helper()
	RunDifferentialWith(t, newIndex, NewReference, n)
}

// RunDifferentialWith is RunDifferential against the references newRef
// returns (NewShardedReference for an indexer.Sharded index).
func RunDifferentialWith(t *testing.T, newIndex func() indexer.Index, newRef func() *Reference, n int) {
	t.Helper()
	for seed := range uint64(n) {
		if !runSequence(t, newIndex, newRef, seed) {
			return
		}
	}
}

// gen draws events from small alphabets so that collisions, duplicates,
// shared prefixes and mid-chain removals are frequent.
type gen struct {
	rng  *rand.Rand
	ref  *Reference
	hmax uint64 // engine hashes in [1, hmax]
	lmax uint64 // local hashes in [1, lmax]
}

func (g *gen) worker() kvevents.Worker {
	return kvevents.Worker{ID: 1 + g.rng.Uint64N(3), Rank: uint32(g.rng.IntN(2))}
}

// heldHash returns a random hash w holds, or false.
func (g *gen) heldHash(w kvevents.Worker) (uint64, bool) {
	held := g.ref.workers[w]
	if len(held) == 0 {
		return 0, false
	}
	k := g.rng.IntN(len(held))
	for h := range held {
		if k == 0 {
			return h, true
		}
		k--
	}
	return 0, false
}

func (g *gen) event() kvevents.Event {
	w := g.worker()
	ev := kvevents.Event{WorkerID: w.ID, DPRank: w.Rank}
	switch x := g.rng.IntN(100); {
	case x < 60:
		ev.Kind = kvevents.KindStored
		switch y := g.rng.IntN(100); {
		case y < 65:
			ev.Parent, ev.HasParent = g.heldHash(w)
		case y < 72:
			ev.Parent, ev.HasParent = 1+g.rng.Uint64N(g.hmax), true
		}
		nb := 1 + g.rng.IntN(5)
		for range nb {
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: 1 + g.rng.Uint64N(g.hmax), Local: 1 + g.rng.Uint64N(g.lmax)})
		}
		if g.rng.IntN(40) == 0 {
			ev.Blocks = nil
		}
	case x < 92:
		ev.Kind = kvevents.KindRemoved
		for range 1 + g.rng.IntN(3) {
			if h, ok := g.heldHash(w); ok && g.rng.IntN(5) > 0 {
				ev.Hashes = append(ev.Hashes, h)
			} else {
				ev.Hashes = append(ev.Hashes, 1+g.rng.Uint64N(g.hmax))
			}
		}
	case x < 98:
		ev.Kind = kvevents.KindCleared
	default:
		ev.Kind = kvevents.Kind(7) // malformed
	}
	return ev
}

// query draws a prompt: usually a held path, extended or mutated, else
// random locals.
func (g *gen) query() []uint64 {
	var q []uint64
	w := g.worker()
	if h, ok := g.heldHash(w); ok && g.rng.IntN(4) > 0 {
		held := g.ref.workers[w]
		for x, ok := held[h], true; ok; {
			q = append([]uint64{x.local}, q...)
			if !x.hasParent {
				break
			}
			x, ok = held[x.parent]
		}
		switch g.rng.IntN(3) {
		case 0:
			for range g.rng.IntN(3) {
				q = append(q, 1+g.rng.Uint64N(g.lmax))
			}
		case 1:
			q[g.rng.IntN(len(q))] = 1 + g.rng.Uint64N(g.lmax)
		}
		return q
	}
	for range g.rng.IntN(7) {
		q = append(q, 1+g.rng.Uint64N(g.lmax))
	}
	return q
}

func errClass(err error) string {
	for _, e := range []error{indexer.ErrUnknownParent, indexer.ErrSelfParent, indexer.ErrBadEvent} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return "ok"
}

func runSequence(t *testing.T, newIndex func() indexer.Index, newRef func() *Reference, seed uint64) bool {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	ref := newRef()
	g := &gen{rng: rng, ref: ref, hmax: 4 + rng.Uint64N(40), lmax: 2 + rng.Uint64N(6)}
	idx := newIndex()
	var log []kvevents.Event
	fail := func(format string, args ...any) bool {
		t.Errorf("seed %d after %d events:", seed, len(log))
		for _, ev := range log {
			t.Logf("  %v", ev)
		}
		t.Errorf(format, args...)
		return false
	}
	steps := 10 + rng.IntN(60)
	for range steps {
		if rng.IntN(50) == 0 {
			id := 1 + rng.Uint64N(3)
			log = append(log, kvevents.Event{WorkerID: id, Kind: kvevents.Kind(100)}) // marker
			ref.RemoveWorker(id)
			idx.RemoveWorker(id)
		} else {
			ev := g.event()
			log = append(log, ev)
			e1, e2 := ref.Apply(&ev), idx.Apply(&ev)
			if c1, c2 := errClass(e1), errClass(e2); c1 != c2 {
				return fail("apply %v: reference %s, index %s", ev, c1, c2)
			}
		}
		for range 3 {
			q := g.query()
			if a, b := FormatOverlaps(ref.FindMatches(q)), FormatOverlaps(idx.FindMatches(q)); a != b {
				return fail("match %v:\nreference:\n%s\nindex:\n%s", q, a, b)
			}
		}
		if c, ok := idx.(interface{ Check() error }); ok {
			if err := c.Check(); err != nil {
				return fail("check: %v", err)
			}
		}
	}
	if a, b := FormatStats(ref.Stats()), FormatStats(idx.Stats()); a != b {
		return fail("stats: reference %s, index %s", a, b)
	}
	evs := idx.Dump()
	if a, b := FormatEvents(ref.Dump()), FormatEvents(evs); a != b {
		return fail("dump:\nreference:\n%s\nindex:\n%s", a, b)
	}
	if err := CheckRebuild(idx, newIndex, evs); err != nil {
		return fail("rebuild: %v", err)
	}
	return true
}
