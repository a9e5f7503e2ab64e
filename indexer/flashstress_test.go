package indexer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// A differential stress test of Flash's lock-free lookups: writers apply
// per-worker monotone scripts concurrently (a shrinking worker only
// removes or clears, a growing one only stores), so a worker's overlap
// for a query can only fall, or only rise, while they run; every lookup
// made meanwhile must give each worker an overlap between its value before
// the scripts and after them (0 for a worker it leaves out). A lookup that
// read an entry, a member block or a slot after a writer reused it, or
// accepted an exact-mode walk torn across writes, names a wrong worker or
// an overlap out of those bounds.

// stressChain is one chain a worker holds: its hashes and local hashes,
// and the template it follows (-1 once it diverged).
type stressChain struct {
	hashes, locals []uint64
	tmpl           int
}

type stressWorker struct {
	id     uint64
	next   uint64
	chains []*stressChain
}

func (w *stressWorker) hash() uint64 { w.next++; return w.id<<32 | w.next }

// extend returns a Stored event adding n blocks to c (from the root when
// c is empty), following c's template while it has not diverged.
func (w *stressWorker) extend(rng *rand.Rand, tmpls [][]uint64, c *stressChain, n int) kvevents.Event {
	ev := kvevents.Event{WorkerID: w.id, Kind: kvevents.KindStored}
	if len(c.hashes) > 0 {
		ev.HasParent, ev.Parent = true, c.hashes[len(c.hashes)-1]
	}
	for range n {
		p := len(c.locals)
		if c.tmpl >= 0 && (p >= len(tmpls[c.tmpl]) || rng.IntN(40) == 0) {
			c.tmpl = -1
		}
		l := 1000 + rng.Uint64N(3)
		if c.tmpl >= 0 {
			l = tmpls[c.tmpl][p]
		}
		h := w.hash()
		c.hashes, c.locals = append(c.hashes, h), append(c.locals, l)
		ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: h, Local: l})
	}
	return ev
}

// stressStep is one scripted write: an event, or RemoveWorker(rmWorker).
type stressStep struct {
	ev       kvevents.Event
	rmWorker uint64
}

// stressRound builds a base index, then runs the shrinking and growing
// scripts on writers goroutines while readers look up and a third party
// takes the read lock (Stats, which makes long events yield mid-way), and
// checks every lookup against the before and after results.
func stressRound(t *testing.T, seed uint64, stride int) {
	rng := rand.New(rand.NewPCG(seed, uint64(stride)))
	tmpls := make([][]uint64, 3)
	for i := range tmpls {
		tmpls[i] = make([]uint64, 120)
		for p := range tmpls[i] {
			tmpls[i][p] = 1 + rng.Uint64N(3)
		}
		tmpls[i][0] = 10 + uint64(i) // no prefix of two templates is shared
	}
	f := NewFlash(FlashConfig{Stride: stride, BlocksPerWorker: 16})
	const base = 12
	workers := map[uint64]*stressWorker{}
	grows := map[uint64]bool{} // false: shrinks (or untouched)
	for id := uint64(1); id <= base+8; id++ {
		workers[id] = &stressWorker{id: id}
		grows[id] = id%2 == 0 || id > base
	}
	for id := uint64(1); id <= base; id++ {
		w := workers[id]
		for k := range 2 + rng.IntN(2) { // one chain per template: a worker
			// holding one prefix under two hashes would refuse extensions
			c := &stressChain{tmpl: k}
			w.chains = append(w.chains, c)
			for n := 1 + rng.IntN(80); n > 0; {
				k := min(n, 1+rng.IntN(45)) // some above warmSpan: yields
				ev := w.extend(rng, tmpls, c, k)
				if err := f.Apply(&ev); err != nil {
					t.Fatal(err)
				}
				n -= k
			}
		}
	}
	// Slots of workers removed before the scripts are reused by the
	// growing workers that join during them.
	f.RemoveWorker(base - 1)
	f.RemoveWorker(base - 3)

	scripts := map[uint64][]stressStep{}
	for id, w := range workers {
		var s []stressStep
		switch {
		case id == base-1 || id == base-3:
			continue
		case grows[id]:
			for range 6 {
				var c *stressChain
				if len(w.chains) < len(tmpls) && (len(w.chains) == 0 || rng.IntN(4) == 0) {
					c = &stressChain{tmpl: len(w.chains)}
					w.chains = append(w.chains, c)
				} else {
					c = w.chains[rng.IntN(len(w.chains))]
				}
				s = append(s, stressStep{ev: w.extend(rng, tmpls, c, 1+rng.IntN(45))})
			}
		default:
			for range 5 {
				c := w.chains[rng.IntN(len(w.chains))]
				if len(c.hashes) == 0 {
					continue
				}
				ev := kvevents.Event{WorkerID: id, Kind: kvevents.KindRemoved}
				from := len(c.hashes) - 1 - rng.IntN(min(len(c.hashes), 40))
				if rng.IntN(5) == 0 {
					from = rng.IntN(len(c.hashes)) // interior: drops descendants too
					ev.Hashes = append(ev.Hashes, c.hashes[from])
				} else {
					for i := len(c.hashes) - 1; i >= from; i-- {
						ev.Hashes = append(ev.Hashes, c.hashes[i])
					}
				}
				c.hashes, c.locals = c.hashes[:from], c.locals[:from]
				s = append(s, stressStep{ev: ev})
			}
			switch id % 4 {
			case 1:
				s = append(s, stressStep{ev: kvevents.Event{WorkerID: id, Kind: kvevents.KindCleared}})
			case 3:
				s = append(s, stressStep{rmWorker: id})
			}
		}
		scripts[id] = s
	}

	queries := make([][]uint64, 48)
	for i := range queries {
		tp := tmpls[rng.IntN(len(tmpls))]
		q := slices.Clone(tp[:1+rng.IntN(len(tp))])
		if rng.IntN(4) == 0 {
			q[rng.IntN(len(q))] = 1000 + rng.Uint64N(3)
		}
		queries[i] = q
	}
	before := make([]map[kvevents.Worker]int, len(queries))
	for i, q := range queries {
		before[i] = overlapMap(f.FindMatches(q))
	}

	type result struct {
		q   int
		got Overlaps
	}
	const readers, writers = 2, 3
	results := make([][]result, readers)
	stop := make(chan struct{})
	var rg, ready sync.WaitGroup
	for r := range readers {
		rg.Add(1)
		ready.Add(1)
		go func() {
			defer rg.Done()
			rr := rand.New(rand.NewPCG(seed, uint64(r)))
			for n := 0; ; n++ {
				if n == 1 {
					ready.Done() // writers start once every reader runs
				}
				if n > 1 {
					select {
					case <-stop:
						return
					default:
					}
				}
				i := rr.IntN(len(queries))
				if len(results[r]) < 4000 {
					results[r] = append(results[r], result{i, f.AppendMatches(nil, queries[i])})
				} else {
					_ = f.FindMatches(queries[i])
				}
			}
		}()
	}
	rg.Add(1)
	go func() {
		defer rg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = f.Stats()
		}
	}()
	ready.Wait()
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine [][]stressStep
			for id := uint64(1); id <= base+8; id++ {
				if int(id)%writers == g && len(scripts[id]) > 0 {
					mine = append(mine, scripts[id])
				}
			}
			for step := 0; ; step++ {
				var batch []kvevents.Event
				for _, s := range mine {
					if step >= len(s) {
						continue
					}
					if s[step].rmWorker != 0 {
						f.RemoveWorker(s[step].rmWorker)
						continue
					}
					if g == 0 { // Concurrent's batched writes
						batch = append(batch, s[step].ev)
						continue
					}
					_ = f.Apply(&s[step].ev)
				}
				if len(batch) > 0 {
					f.applyBatch(batch, make([]error, len(batch)))
				}
				if step > 8 {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rg.Wait()
	if err := f.check(); err != nil {
		t.Fatal(err)
	}

	after := make([]map[kvevents.Worker]int, len(queries))
	for i, q := range queries {
		after[i] = overlapMap(f.FindMatches(q))
	}
	n := 0
	for _, rs := range results {
		for _, r := range rs {
			n++
			if err := checkBetween(r.got, queries[r.q], before[r.q], after[r.q], grows); err != nil {
				t.Fatalf("seed %d stride %d query %v: %v\nbefore %v\nafter  %v", seed, stride, queries[r.q], err, before[r.q], after[r.q])
			}
		}
	}
	if n == 0 {
		t.Fatal("no lookup ran")
	}
}

func overlapMap(o Overlaps) map[kvevents.Worker]int {
	m := make(map[kvevents.Worker]int, len(o))
	for _, x := range o {
		m[x.Worker] = x.Blocks
	}
	return m
}

// checkBetween checks that got is well formed and gives every worker an
// overlap between before and after (in the direction its script moves).
func checkBetween(got Overlaps, q []uint64, before, after map[kvevents.Worker]int, grows map[uint64]bool) error {
	seen := map[kvevents.Worker]int{}
	for i, o := range got {
		if i > 0 && got[i-1].Worker.Compare(o.Worker) >= 0 {
			return fmt.Errorf("unsorted or repeated workers: %v", got)
		}
		if o.Blocks < 1 || o.Blocks > len(q) {
			return fmt.Errorf("overlap %+v out of range", o)
		}
		seen[o.Worker] = o.Blocks
	}
	all := map[kvevents.Worker]bool{}
	for _, m := range []map[kvevents.Worker]int{seen, before, after} {
		for w := range m {
			all[w] = true
		}
	}
	for w := range all {
		lo, hi := after[w], before[w]
		if grows[w.ID] {
			lo, hi = hi, lo
		}
		if o := seen[w]; o < lo || o > hi {
			return fmt.Errorf("worker %v: overlap %d, want between %d (before) and %d (after) in %v", w, o, before[w], after[w], got)
		}
	}
	return nil
}

// TestFlashLookupsBetweenBeforeAndAfter runs stressRound over seeds and
// strides (run it with -race and without, with -count and GOMAXPROCS=2).
func TestFlashLookupsBetweenBeforeAndAfter(t *testing.T) {
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	for _, stride := range []int{1, 3, 64} {
		for seed := range uint64(rounds) {
			stressRound(t, seed, stride)
		}
	}
}
