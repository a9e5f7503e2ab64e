package indexer

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// bigEvents returns, per worker, long Stored chains (several yield spans)
// under shared prefixes, then Removed events of many hashes, leaf-first
// or shuffled (so remove sorts), some naming unknown hashes.
func bigEvents(rng *rand.Rand, workers int) []kvevents.Event {
	var evs []kvevents.Event
	for w := range workers {
		id := uint64(w + 1)
		n := 40 + rng.IntN(150)
		st := kvevents.Event{WorkerID: id, Kind: kvevents.KindStored}
		for i := range n {
			local := uint64(i + 1) // shared prefix across workers
			if i > n/2 {
				local = rng.Uint64()
			}
			st.Blocks = append(st.Blocks, kvevents.Block{Hash: id<<32 | uint64(i+1), Local: local})
		}
		evs = append(evs, st)
	}
	for w := range workers {
		id := uint64(w + 1)
		var hs []uint64
		for i := 70; i >= 5; i-- {
			hs = append(hs, id<<32|uint64(i))
		}
		if w%2 == 1 {
			rng.Shuffle(len(hs), func(i, j int) { hs[i], hs[j] = hs[j], hs[i] })
		}
		hs = append(hs, 1<<62) // unknown
		evs = append(evs, kvevents.Event{WorkerID: id, Kind: kvevents.KindRemoved, Hashes: hs})
	}
	return evs
}

// TestFlashYieldSame: with a reader always announced as waiting, every
// yield point of store and remove releases and retakes the lock; the
// result must be exactly that of an index that never yields.
func TestFlashYieldSame(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	evs := bigEvents(rng, 12)
	plain, yielding := NewFlash(FlashConfig{}), NewFlash(FlashConfig{BlocksPerWorker: 64})
	yielding.mu.waiting.Add(1)
	for i := range evs {
		e1, e2 := plain.Apply(&evs[i]), yielding.Apply(&evs[i])
		if (e1 == nil) != (e2 == nil) {
			t.Fatalf("event %d: %v vs %v", i, e1, e2)
		}
		if i == 11 || i == len(evs)-1 { // after the stores, at the end
			q := make([]uint64, 200)
			for k := range q {
				q[k] = uint64(k + 1)
			}
			if a, b := plain.FindMatches(q), yielding.FindMatches(q); !slices.Equal(a, b) {
				t.Fatalf("event %d: matches %v vs %v", i, a, b)
			}
		}
	}
	yielding.mu.waiting.Add(-1)
	if a, b := plain.Dump(), yielding.Dump(); len(a) != len(b) {
		t.Fatalf("dump: %d vs %d events", len(a), len(b))
	}
	a, b := plain.Stats(), yielding.Stats()
	a.Bytes, b.Bytes = 0, 0 // the hint sizes tables differently
	if a != b || a.UnknownRemove == 0 {
		t.Fatalf("stats: %+v vs %+v", a, b)
	}
	if err := yielding.check(); err != nil {
		t.Fatal(err)
	}
}

// TestFlashYieldConcurrent runs lookups against writers applying long
// events (so readers spin, wait and get let in mid-event): every overlap
// is within the query, and the final index is the sequential one.
func TestFlashYieldConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	evs := bigEvents(rng, 8)
	f, ref := NewFlash(FlashConfig{}), NewFlash(FlashConfig{})
	for i := range evs {
		_ = ref.Apply(&evs[i])
	}
	q := make([]uint64, 100)
	for k := range q {
		q[k] = uint64(k + 1)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, o := range f.FindMatches(q) {
					if o.Blocks < 1 || o.Blocks > len(q) {
						t.Errorf("overlap %+v out of range", o)
					}
				}
			}
		}()
	}
	// One goroutine per worker, each in event order (Apply's contract).
	var ww sync.WaitGroup
	for w := range 8 {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := range evs {
				if evs[i].WorkerID == uint64(w+1) {
					if err := f.Apply(&evs[i]); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	if a, b := f.Stats(), ref.Stats(); a.Blocks != b.Blocks || a.Nodes != b.Nodes {
		t.Fatalf("stats: %+v vs %+v", a, b)
	}
	if a, b := f.FindMatches(q), ref.FindMatches(q); !slices.Equal(a, b) {
		t.Fatalf("matches %v vs %v", a, b)
	}
}

// TestFlashYieldCurFreed: an event whose entry cur was freed meanwhile
// (another goroutine removed the worker's block, breaking Apply's
// contract) stops at yield, though a freed entry keeps its last member's
// set word (dropLeaf); a cur still held goes on.
func TestFlashYieldCurFreed(t *testing.T) {
	f := NewFlash(FlashConfig{})
	st := kvevents.Event{WorkerID: 1, Kind: kvevents.KindStored,
		Blocks: []kvevents.Block{{Hash: 10, Local: 100}, {Hash: 11, Local: 101}}}
	rm := kvevents.Event{WorkerID: 1, Kind: kvevents.KindRemoved, Hashes: []uint64{11}}
	f.lock()
	defer f.unlock()
	if err := f.apply(&st); err != nil {
		t.Fatal(err)
	}
	slot, _ := f.slots.lookup(st.Worker())
	table := f.tables[slot]
	kept, _ := table.get(10)
	freed, _ := table.get(11)
	if err := f.apply(&rm); err != nil {
		t.Fatal(err)
	}
	f.mu.waiting.Add(1) // as if a lookup waited: yield lets it in
	defer f.mu.waiting.Add(-1)
	if !f.yield(slot, table, kept) {
		t.Fatal("yield stops an event whose entry is still held")
	}
	if f.yield(slot, table, freed) {
		t.Fatal("yield goes on with a freed entry")
	}
}
