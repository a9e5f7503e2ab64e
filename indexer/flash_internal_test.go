package indexer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Entries keep no local hash: Dump recovers it by inverting prefixID.
func TestPrefixIDInverse(t *testing.T) {
	for _, k := range []uint64{pidK1, pidK2} {
		if got := k * mulInverse(k); got != 1 {
			t.Fatalf("mulInverse(%#x): product %#x", k, got)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 10000 {
		p, l := rng.Uint64(), rng.Uint64()
		if rng.IntN(4) == 0 {
			l = rng.Uint64N(8) // small locals, as in the differential test
		}
		if got := localOf(p, prefixID(p, l)); got != l {
			t.Fatalf("localOf(%#x, prefixID(%#x, %#x)) = %#x", p, p, l, got)
		}
	}
}

// prefixID's collision guarantees: siblings and equal locals under
// different parents never collide (both maps are bijections).
func TestPrefixIDDistinct(t *testing.T) {
	seen := make(map[uint64][2]uint64)
	for p := range uint64(64) {
		for l := range uint64(64) {
			id := prefixID(p, l)
			if o, dup := seen[id]; dup {
				t.Fatalf("prefixID(%d, %d) == prefixID(%d, %d)", p, l, o[0], o[1])
			}
			seen[id] = [2]uint64{p, l}
		}
	}
}

// htable against a Go map under random puts, overwrites and deletes on a
// small key space (long probe runs, wrap-around, backward shifts), and
// its Robin Hood order.
func TestHtableMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 50 {
		h, m := newHtable(rng.IntN(4)), map[uint64]uint32{}
		keys := uint64(4 + round*8)
		for range 2000 {
			k := rng.Uint64N(keys) * 0x9e3779b97f4a7c15 >> (rng.Uint64N(2) * 60) // clustered and spread keys
			switch rng.IntN(4) {
			case 0, 1:
				v := rng.Uint32N(1 << 20)
				h.put(k, v)
				m[k] = v
			case 3: // find, then insert at the reserved slot if absent
				i, ok := h.find(k)
				if _, in := m[k]; ok != in {
					t.Fatalf("round %d: find(%#x) = %v, map has it: %v", round, k, ok, in)
				}
				if !ok {
					v := rng.Uint32N(1 << 20)
					h.putAt(i, k, v)
					m[k] = v
				}
			case 2:
				h.del(k)
				delete(m, k)
			}
			if h.len() != len(m) {
				t.Fatalf("round %d: len %d, map %d", round, h.len(), len(m))
			}
		}
		for k, v := range m {
			if got, ok := h.get(k); !ok || got != v {
				t.Fatalf("round %d: get(%#x) = %d, %v; want %d", round, k, got, ok, v)
			}
		}
		n := 0
		for k, v := range h.all() {
			if m[k] != v {
				t.Fatalf("round %d: all yields %#x -> %d, map has %d", round, k, v, m[k])
			}
			n++
		}
		if n != len(m) || htDen*h.len() > htNum*len(h.s) {
			t.Fatalf("round %d: %d pairs iterated of %d, %d slots", round, n, len(m), len(h.s))
		}
		// Robin Hood order: along a run, a key is at most one slot
		// farther from its home than the key before it, and a run starts
		// with a key at its home.
		for i := range h.s {
			j := h.next(i)
			if h.s[j].v == noEntry {
				continue
			}
			if d := h.dist(j); h.s[i].v == noEntry && d != 0 || h.s[i].v != noEntry && d > h.dist(i)+1 {
				t.Fatalf("round %d: slot %d at distance %d after slot %d", round, j, d, i)
			}
		}
	}
}

// htable's filtered scans (stop's and find's hi bound, see stop) against
// their plain definitions, on tables from 8 slots to large ones (where a
// bound that is off by one slot's range shows), at load 7/8 with
// wrapped runs: stop(j) is the first slot at or after j that is empty or
// holds a key at its home, find the first slot that is empty, holds the
// key or a key nearer its home than the key would be. Empty slots are
// hslotEmpty (stop's filter must not pass over one).
func TestHtableScans(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{8, 9, 100, 1001, 1 << 16, 70001} {
		h := &htable{}
		h.resize(n)
		for h.len() < n*htNum/htDen {
			k := rng.Uint64()
			if i, ok := h.find(k); !ok && i >= 0 && htDen*(h.n+1) <= htNum*len(h.s) {
				h.putAt(i, k, uint32(h.len()))
			}
		}
		for j := range h.s {
			if e := h.s[j]; e.v == noEntry && e != hslotEmpty {
				t.Fatalf("n=%d: empty slot %d is %+v", n, j, e)
			}
			want := j
			for h.s[want].v != noEntry && h.dist(want) != 0 {
				want = h.next(want)
			}
			if got := h.stop(j); got != want {
				t.Fatalf("n=%d: stop(%d) = %d, want %d", n, j, got, want)
			}
		}
		for range 20000 {
			k := rng.Uint64()
			if rng.IntN(2) == 0 { // present
				for {
					if j := rng.IntN(len(h.s)); h.s[j].v != noEntry {
						k = h.s[j].key()
						break
					}
				}
			}
			want, in := h.home(k), false
			for d := 0; ; want, d = h.next(want), d+1 {
				e := &h.s[want]
				if e.v == noEntry || h.dist(want) < d {
					break
				}
				if e.key() == k {
					in = true
					break
				}
			}
			if got, ok := h.find(k); got != want || ok != in {
				t.Fatalf("n=%d: find(%#x) = %d, %v; want %d, %v", n, k, got, ok, want, in)
			}
		}
	}
}

// htable.resize keeps every pair and the Robin Hood order: tables of
// several sizes at load 7/8 (runs that wrap past the end included, and
// keys crowded at the end so that the new table's last run wraps too),
// grown by one slot, an eighth, a thirty-second and double.
func TestHtableResize(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{8, 9, 57, 1000, 5003} {
		for _, grow := range []func(int) int{
			func(n int) int { return n + 1 }, func(n int) int { return n + n/8 },
			func(n int) int { return n + n/32 }, func(n int) int { return 2 * n },
		} {
			for _, crowd := range []bool{false, true} {
				h, m := &htable{}, map[uint64]uint32{}
				h.resize(n)
				for len(m) < n*htNum/htDen {
					k := rng.Uint64()
					if crowd && rng.IntN(4) == 0 {
						// A key whose mixed form is in the top 1/64.
						k = (rng.Uint64()>>6 | 63<<58) * pidK1Inv
					}
					if _, in := m[k]; !in {
						v := rng.Uint32N(1 << 20)
						h.put(k, v)
						m[k] = v
					}
				}
				size := grow(len(h.s))
				h.resize(size)
				if len(h.s) != size || h.len() != len(m) {
					t.Fatalf("n=%d: %d slots, %d keys; want %d, %d", n, len(h.s), h.len(), size, len(m))
				}
				for k, v := range m {
					if got, ok := h.get(k); !ok || got != v {
						t.Fatalf("n=%d size %d: get(%#x) = %d, %v; want %d", n, size, k, got, ok, v)
					}
				}
				if err := htableOrder(h); err != nil {
					t.Fatalf("n=%d size %d: %v", n, size, err)
				}
			}
		}
	}
}

// htableOrder checks h's Robin Hood order: along a run, a key is at most
// one slot farther from its home than the key before it, and a run
// starts with a key at its home.
func htableOrder(h *htable) error {
	n := 0
	for i := range h.s {
		if h.s[i].v == noEntry {
			continue
		}
		n++
		p := (i + len(h.s) - 1) % len(h.s)
		if d := h.dist(i); h.s[p].v == noEntry && d != 0 || h.s[p].v != noEntry && d > h.dist(p)+1 {
			return fmt.Errorf("slot %d at distance %d after slot %d", i, d, p)
		}
	}
	if n != h.n {
		return fmt.Errorf("%d keys in the slots, count %d", n, h.n)
	}
	return nil
}

// mergeOverlaps against a sort, on random splits of random worker sets
// (the stack-buffer merges, front to back and back to front, and the sort
// fallback); the merges keep equal workers in order, as a stable sort.
func TestMergeOverlaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		n := rng.IntN(2 * (mergeStack + 8))
		// Even and skewed splits: either part the smaller.
		inA := []int{4, 1, 7}[rng.IntN(3)]
		var a, b Overlaps
		for i := range n {
			o := Overlap{Worker: kvevents.Worker{ID: rng.Uint64N(40), Rank: rng.Uint32N(2)}, Blocks: i}
			if rng.IntN(8) < inA {
				a = append(a, o)
			} else {
				b = append(b, o)
			}
		}
		slices.SortStableFunc(a, cmpOverlap)
		slices.SortStableFunc(b, cmpOverlap)
		o := append(slices.Clone(a), b...)
		want := slices.Clone(o)
		slices.SortStableFunc(want, cmpOverlap)
		mergeOverlaps(o, len(a))
		stable := min(len(a), len(b)) <= mergeStack
		for i := range o {
			if o[i].Worker != want[i].Worker || stable && o[i] != want[i] {
				t.Fatalf("merge of %d+%d: at %d got %v want %v", len(a), len(b), i, o[i], want[i])
			}
		}
	}
}

// TestFlashCheckView: the invariant check finds a view that does not
// cover the writers' arrays (an array replaced without publish) or names
// a used slot's worker wrongly: a lookup would read stale ids or members.
func TestFlashCheckView(t *testing.T) {
	f := NewFlash(FlashConfig{})
	for id := uint64(1); id <= 3; id++ {
		ev := kvevents.Event{WorkerID: id, Kind: kvevents.KindStored,
			Blocks: []kvevents.Block{{Hash: 1, Local: 1}, {Hash: 2, Local: 2}}}
		if err := f.Apply(&ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
	for name, stale := range map[string]func(v *fview){
		"ids":    func(v *fview) { v.ids = slices.Clone(v.ids) },
		"arena":  func(v *fview) { v.arena = v.arena[:len(v.arena)-1] },
		"chunks": func(v *fview) { v.chunks = nil },
		"names":  func(v *fview) { v.names = slices.Clone(v.names); v.names[1].ID = 9 },
	} {
		good := f.view.Load()
		v := *good
		stale(&v)
		f.view.Store(&v)
		if err := f.check(); err == nil {
			t.Errorf("%s: a stale view passed the check", name)
		}
		f.view.Store(good)
	}
}
