package indexer

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// churnEvents returns, per worker, a stream of chains over a small local
// alphabet (so that workers share prefixes and member sets grow and
// shrink), leaf-first evictions, re-stores and clears.
func churnEvents(rng *rand.Rand, id uint64, n int) []kvevents.Event {
	var evs []kvevents.Event
	var held []uint64 // hashes in store order
	next := id << 32
	for range n {
		switch x := rng.IntN(10); {
		case x < 6:
			ev := kvevents.Event{WorkerID: id, Kind: kvevents.KindStored}
			l := uint64(0)
			if len(held) > 0 && rng.IntN(2) == 0 {
				ev.HasParent, ev.Parent = true, held[len(held)-1]
			} else {
				held = held[:0] // a new chain from the root (the old one is still held)
			}
			for range 1 + rng.IntN(12) {
				next++
				l = 1 + rng.Uint64N(3)
				ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: next, Local: l})
				held = append(held, next)
			}
			evs = append(evs, ev)
		case x < 9 && len(held) > 0:
			k := 1 + rng.IntN(len(held))
			ev := kvevents.Event{WorkerID: id, Kind: kvevents.KindRemoved}
			for i := len(held) - 1; i >= len(held)-k; i-- {
				ev.Hashes = append(ev.Hashes, held[i])
			}
			held = held[:len(held)-k]
			evs = append(evs, ev)
		default:
			evs = append(evs, kvevents.Event{WorkerID: id, Kind: kvevents.KindCleared})
			held = held[:0]
		}
	}
	return evs
}

func randomQuery(rng *rand.Rand) []uint64 {
	q := make([]uint64, 1+rng.IntN(40))
	for i := range q {
		q[i] = 1 + rng.Uint64N(3)
	}
	return q
}

// TestFlashSafeMatchesExact: on a quiet index, a lookup's safe mode (the
// one that tolerates concurrent writes) returns exactly what its exact
// mode does, through every bisection path (strides 1-3, 64), and both do
// given the query's prefix ids (AppendMatchesIDs).
func TestFlashSafeMatchesExact(t *testing.T) {
	for _, stride := range []int{1, 2, 3, 64} {
		rng := rand.New(rand.NewPCG(uint64(stride), 7))
		f := NewFlash(FlashConfig{Stride: stride})
		streams := make([][]kvevents.Event, 24)
		for w := range streams {
			streams[w] = churnEvents(rng, uint64(w+1), 60)
		}
		for i := range 60 {
			for w := range streams {
				_ = f.Apply(&streams[w][i])
			}
			for range 20 {
				q := randomQuery(rng)
				ep := f.enterRead()
				exact, safe := f.match(nil, q, nil, false), f.match(nil, q, nil, true)
				ids := kvhash.AppendPrefixIDs(nil, q)
				exactIDs, safeIDs := f.match(nil, q, ids, false), f.match(nil, q, ids, true)
				f.exitRead(ep)
				if !slices.Equal(exact, safe) {
					t.Fatalf("stride %d step %d query %v: exact %v safe %v", stride, i, q, exact, safe)
				}
				if !slices.Equal(exact, exactIDs) || !slices.Equal(exact, safeIDs) {
					t.Fatalf("stride %d step %d query %v: exact %v, given the prefix ids %v (safe %v)", stride, i, q, exact, exactIDs, safeIDs)
				}
			}
		}
		if err := f.check(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFlashReadersDuringWrites runs lock-free lookups while writers churn
// member sets, entries, worker slots and the tables' arrays (run it with
// -race). Every result is well formed; a worker that holds one chain
// throughout gets its exact overlap in every lookup; afterwards the index
// equals one built sequentially.
func TestFlashReadersDuringWrites(t *testing.T) {
	const writers, steady = 4, 1000
	rng := rand.New(rand.NewPCG(8, 9))
	events := 300
	if testing.Short() {
		events = 100
	}
	streams := make([][]kvevents.Event, 4*writers)
	for w := range streams {
		streams[w] = churnEvents(rng, uint64(w+1), events)
	}
	q := []uint64{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}
	f, ref := NewFlash(FlashConfig{Stride: 2}), NewFlash(FlashConfig{Stride: 2})
	st := kvevents.Event{WorkerID: steady, Kind: kvevents.KindStored}
	for i, l := range q[:7] {
		st.Blocks = append(st.Blocks, kvevents.Block{Hash: uint64(i + 1), Local: l})
	}
	for _, x := range []*Flash{f, ref} {
		if err := x.Apply(&st); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst Overlaps
			for {
				select {
				case <-stop:
					return
				default:
				}
				dst = f.AppendMatches(dst[:0], q)
				found := false
				for i, o := range dst {
					if o.Blocks < 1 || o.Blocks > len(q) || o.Worker.ID == 0 || o.Worker.ID > steady {
						t.Errorf("overlap %+v out of range", o)
					}
					if i > 0 && dst[i-1].Worker.Compare(o.Worker) >= 0 {
						t.Errorf("overlaps unsorted: %v", dst)
					}
					if o.Worker.ID == steady {
						found = true
						if o.Blocks != 7 {
							t.Errorf("steady worker: overlap %d, want 7", o.Blocks)
						}
					}
				}
				if !found {
					t.Errorf("steady worker missing from %v", dst)
				}
			}
		}()
	}
	var ww sync.WaitGroup
	for g := range writers {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := range events {
				for w := g; w < len(streams); w += writers {
					_ = f.Apply(&streams[w][i])
				}
			}
		}()
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	for i := range events {
		for w := range streams {
			_ = ref.Apply(&streams[w][i])
		}
	}
	for range 200 {
		qq := randomQuery(rng)
		if a, b := f.FindMatches(qq), ref.FindMatches(qq); !slices.Equal(a, b) {
			t.Fatalf("query %v: %v, sequential %v", qq, a, b)
		}
	}
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
}

// TestFlashRetiredWaitForReaders: what writers free while a lookup is in
// its read section (entries, member blocks, worker slots) is not reused
// until the lookup has returned, and is recycled soon after.
func TestFlashRetiredWaitForReaders(t *testing.T) {
	f := NewFlash(FlashConfig{})
	store := func(id uint64, locals ...uint64) {
		ev := kvevents.Event{WorkerID: id, Kind: kvevents.KindStored}
		for i, l := range locals {
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: id<<32 | uint64(i+1), Local: l})
		}
		if err := f.Apply(&ev); err != nil {
			t.Fatal(err)
		}
	}
	store(1, 1, 2, 3)
	store(2, 1, 2, 3)
	store(3, 1, 2, 9)
	ep := f.enterRead()
	entry := f.at(3) // worker 3's third block: a single-holder entry
	seq := entry.seq
	slot3, _ := f.slots.lookup(kvevents.Worker{ID: 3})
	f.RemoveWorker(3)
	f.RemoveWorker(2)
	for i := range 50 { // writes that would reuse what was freed
		store(uint64(10+i), 1, 2, uint64(100+i))
	}
	if entry.seq != seq || entry.mem != 0 {
		t.Fatalf("retired entry reused while a lookup may read it: %+v", *entry)
	}
	if s, _ := f.slots.lookup(kvevents.Worker{ID: 10}); s == slot3 {
		t.Fatal("retired slot reused while a lookup may read it")
	}
	if f.rcu.limbo[0].empty() && f.rcu.limbo[1].empty() {
		t.Fatal("nothing retired")
	}
	f.exitRead(ep)
	store(100, 5)
	store(101, 5)
	if !f.rcu.limbo[0].empty() || !f.rcu.limbo[1].empty() {
		t.Fatalf("retired state not recycled after the lookup returned: %+v", f.rcu.limbo)
	}
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
}

// TestFlashYieldKeepsWritingOdd: Flash.writing is odd exactly while a
// writer holds the lock, also when a writer yields it to another one
// mid-event (lookups take an even, unchanged count for a quiet index: an
// even count during another writer's hold let a lookup accept a result
// read across that writer's changes).
func TestFlashYieldKeepsWritingOdd(t *testing.T) {
	f := NewFlash(FlashConfig{})
	f.mu.waiting.Add(1) // a reader waits: every yield lets go of the lock
	f.lock()
	got := make(chan uint64, 1)
	go func() {
		f.lock()
		got <- f.writing.Load()
		f.unlock()
	}()
	deadline := time.Now().Add(20 * time.Second)
	for done := false; !done; {
		f.yield(0, nil, noEntry)
		select {
		case w := <-got:
			if w&1 == 0 {
				t.Fatalf("writing = %d while the other writer held the lock", w)
			}
			done = true
		default:
			if time.Now().After(deadline) {
				t.Fatal("the other writer never got the lock")
			}
		}
	}
	if w := f.writing.Load(); w&1 == 0 {
		t.Fatalf("writing = %d while holding the lock", w)
	}
	f.unlock()
	if w := f.writing.Load(); w&1 != 0 {
		t.Fatalf("writing = %d with the lock free", w)
	}
}
