package loads

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// randomChain returns a prompt chain from a tree of prompts that branches
// rarely (so prompts share long prefixes): depth blocks whose ids encode
// their path (so chains are prefix-closed, like router sequence hashes).
func randomChain(rng *rand.Rand, depth int) []uint64 {
	out := make([]uint64, depth)
	h := uint64(0)
	for i := range out {
		b := uint64(0)
		if rng.IntN(6) == 0 {
			b = 1 + uint64(rng.IntN(2))
		}
		h = h*7 + b + 1
		out[i] = h
	}
	return out
}

// NewBlocksBySlot agrees with NewBlocks for every worker while requests
// come and go on several workers (the invariants build cross-checks too),
// across slot reuse after RemoveWorker and dead-node collection.
func TestNewBlocksBySlotMatchesNewBlocks(t *testing.T) {
	tr := New(DefaultConfig())
	rng := rand.New(rand.NewPCG(7, 9))
	ws := []kvevents.Worker{{ID: 1}, {ID: 2}, {ID: 2, Rank: 1}, {ID: 3}, {ID: 4}}
	for _, w := range ws {
		tr.Slot(w)
	}
	var active []string
	next := 0
	var dst []int
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 5 || len(active) == 0:
			id := fmt.Sprint("r", next)
			next++
			e := Entry{ID: id, Worker: ws[rng.IntN(len(ws))], Blocks: randomChain(rng, 1+rng.IntN(40)), PrefillTokens: rng.IntN(100)}
			if err := tr.Add(e, epoch); err != nil {
				t.Fatal(err)
			}
			active = append(active, id)
		case op < 9:
			i := rng.IntN(len(active))
			if err := tr.Free(active[i]); err != nil {
				t.Fatal(err)
			}
			active = append(active[:i], active[i+1:]...)
		default:
			// A worker leaves and comes back (its slot may move).
			w := ws[rng.IntN(len(ws))]
			ids := tr.RemoveWorker(w.ID)
			for _, id := range ids {
				for i := range active {
					if active[i] == id {
						active = append(active[:i], active[i+1:]...)
						break
					}
				}
			}
			for _, x := range ws {
				tr.Slot(x)
			}
		}
		q := randomChain(rng, rng.IntN(45))
		dst = tr.NewBlocksBySlot(q, dst)
		if len(dst) != tr.Slots() {
			t.Fatalf("step %d: %d results for %d slots", step, len(dst), tr.Slots())
		}
		for _, w := range ws {
			s := tr.Slot(w)
			if got, want := dst[s], tr.NewBlocks(w, q); got != want {
				t.Fatalf("step %d: w%s slot %d: NewBlocksBySlot %d, NewBlocks %d", step, w, s, got, want)
			}
			if tr.LoadAt(s) != tr.Load(w) {
				t.Fatalf("step %d: LoadAt(%d) = %s, Load(w%s) = %s", step, s, tr.LoadAt(s), w, tr.Load(w))
			}
		}
	}
	for _, id := range active {
		if err := tr.Free(id); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range ws {
		if l := tr.Load(w); l != (Load{}) {
			t.Errorf("w%s leaked %s", w, l)
		}
	}
	if s := tr.Stats(); s.Workers != 0 || s.Requests != 0 {
		t.Errorf("stats after freeing everything: %+v", s)
	}
}

// Blocks of released requests are collected once they outnumber the live
// ones, and a collected hash can come back.
func TestDeadBlocksCollected(t *testing.T) {
	tr := New(DefaultConfig())
	w := kvevents.Worker{ID: 1}
	keep := Entry{ID: "keep", Worker: w, Blocks: []uint64{1, 2}}
	if err := tr.Add(keep, epoch); err != nil {
		t.Fatal(err)
	}
	for i := range 3 * minDead {
		e := Entry{ID: fmt.Sprint("r", i), Worker: w, Blocks: []uint64{uint64(1000 + i)}}
		if err := tr.Add(e, epoch.Add(time.Duration(i))); err != nil {
			t.Fatal(err)
		}
		if err := tr.Free(e.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n := tr.index.len(); n > 2+minDead {
		t.Errorf("index holds %d nodes after %d short requests, want at most %d", n, 3*minDead, 2+minDead)
	}
	if tr.dead >= minDead {
		t.Errorf("%d dead nodes left", tr.dead)
	}
	if got := tr.Load(w); got.DecodeBlocks != 2 || got.Requests != 1 {
		t.Errorf("load after churn %s", got)
	}
	if n := tr.NewBlocks(w, []uint64{1, 2, 1000}); n != 1 {
		t.Errorf("NewBlocks = %d, want 1", n)
	}
	if err := tr.Add(Entry{ID: "again", Worker: w, Blocks: []uint64{1000}}, epoch); err != nil {
		t.Fatal(err)
	}
	if n := tr.NewBlocks(w, []uint64{1000}); n != 0 {
		t.Errorf("re-added collected block: NewBlocks = %d", n)
	}
}

// Add's cache of the last prompt's nodes by position never hands out a
// node that collect has freed, even when the block comes back at the same
// position.
func TestAddCacheSkipsCollectedNodes(t *testing.T) {
	tr := New(DefaultConfig())
	w := kvevents.Worker{ID: 1}
	big := make([]uint64, 2*minDead)
	for i := range big {
		big[i] = uint64(7 + i)
	}
	if err := tr.Add(Entry{ID: "big", Worker: w, Blocks: big}, epoch); err != nil {
		t.Fatal(err)
	}
	if err := tr.Free("big"); err != nil {
		t.Fatal(err)
	}
	if tr.index.len() != 0 || len(tr.freeNodes) != len(big) {
		t.Fatalf("after the free: %d indexed, %d free nodes; want 0, %d", tr.index.len(), len(tr.freeNodes), len(big))
	}
	if err := tr.Add(Entry{ID: "again", Worker: w, Blocks: big[:3]}, epoch); err != nil {
		t.Fatal(err)
	}
	if n := tr.NewBlocks(w, big[:3]); n != 0 {
		t.Errorf("blocks added again after their collection: NewBlocks = %d, want 0", n)
	}
	if n := tr.index.len(); n != 3 {
		t.Errorf("%d blocks indexed, want 3", n)
	}
}

// The tracker keeps its own copy of Entry.Blocks.
func TestAddCopiesBlocks(t *testing.T) {
	tr := New(DefaultConfig())
	w := kvevents.Worker{ID: 1}
	blocks := []uint64{1, 2, 3}
	if err := tr.Add(Entry{ID: "a", Worker: w, Blocks: blocks}, epoch); err != nil {
		t.Fatal(err)
	}
	blocks[0], blocks[1], blocks[2] = 7, 8, 9
	if n := tr.NewBlocks(w, []uint64{1, 2, 3}); n != 0 {
		t.Errorf("NewBlocks after the caller reused its slice = %d", n)
	}
	if err := tr.Free("a"); err != nil {
		t.Fatal(err)
	}
	if l := tr.Load(w); l != (Load{}) {
		t.Errorf("load after free %s", l)
	}
}

// BenchmarkAddFree adds and frees a 64-block request on one of 64 busy
// workers.
func BenchmarkAddFree(b *testing.B) {
	tr := New(DefaultConfig())
	seq := make([]uint64, 64)
	for i := range seq {
		seq[i] = uint64(i*31 + 1)
	}
	for i := range 64 {
		w := kvevents.Worker{ID: uint64(i + 1)}
		if err := tr.Add(Entry{ID: fmt.Sprint("bg", i), Worker: w, Blocks: seq[:i%5+1]}, epoch); err != nil {
			b.Fatal(err)
		}
	}
	var dst []int
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		dst = tr.NewBlocksBySlot(seq, dst)
		if err := tr.Add(Entry{ID: "x", Worker: kvevents.Worker{ID: uint64(i%64 + 1)}, Blocks: seq, PrefillTokens: 10}, epoch); err != nil {
			b.Fatal(err)
		}
		if err := tr.Free("x"); err != nil {
			b.Fatal(err)
		}
	}
}

// The open-addressing table agrees with a map under random puts and
// deletes (deletion shifts runs back; every key must stay reachable).
func TestTableMatchesMap(t *testing.T) {
	var tb table
	want := map[uint64]int32{}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 20000 {
		k := uint64(rng.IntN(3000)) // small keys collide after the multiply too
		if rng.IntN(3) == 0 {
			k = rng.Uint64()
		}
		if _, ok := want[k]; ok {
			tb.del(k)
			delete(want, k)
		} else {
			tb.put(k, int32(i))
			want[k] = int32(i)
		}
		if tb.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", i, tb.len(), len(want))
		}
		if i%997 == 0 {
			for k, v := range want {
				if got, ok := tb.get(k); !ok || got != v {
					t.Fatalf("step %d: get(%d) = %d, %v; want %d", i, k, got, ok, v)
				}
			}
		}
	}
	for k := range 3000 {
		_, ok := tb.get(uint64(k))
		if _, in := want[uint64(k)]; ok != in {
			t.Fatalf("get(%d) present %v, want %v", k, ok, in)
		}
	}
}
