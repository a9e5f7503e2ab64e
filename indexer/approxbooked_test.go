package indexer

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// TestApproxInsertSeqBooked holds InsertSeqBooked, mixed with InsertSeq,
// to a model that keeps each (worker, block)'s expiry in a map: InsertSeq
// sets now + TTL, InsertSeqBooked raises it to booked + TTL unless that is
// already past. Bookings end out of the order they were made (booked up
// to 1.5 TTL before now, prompts sharing prefixes), and after every step
// the structure checks out, the generation queue is in expiry order, a
// lookup equals the model, and the lookup may still gallop (no booking
// broke the prefix closure).
func TestApproxInsertSeqBooked(t *testing.T) {
	const ttl = 100 * time.Millisecond
	rng := rand.New(rand.NewPCG(3, 9))
	// Prompts: 40 chains of up to 24 blocks, each a random other's
	// prefix plus its own tail, so that they share prefixes.
	var chains [][]uint64
	for p := range 40 {
		var locals []uint64
		if p > 0 && rng.IntN(4) > 0 {
			o := chains[rng.IntN(len(chains))]
			locals = append(locals, o[:rng.IntN(len(o)+1)]...)
		}
		for len(locals) < 1+rng.IntN(24) {
			locals = append(locals, rng.Uint64())
		}
		chains = append(chains, locals)
	}
	seqs := make([][]uint64, len(chains))
	for i, c := range chains {
		seqs[i] = kvhash.SeqHashes(c)
	}
	type key struct {
		w   kvevents.Worker
		seq uint64
	}
	model := map[key]int64{}
	a := NewApprox(ApproxConfig{TTL: ttl})
	epoch := time.Unix(1000, 0)
	now := epoch
	booked, reg := 0, 0
	for step := range 4000 {
		now = now.Add(time.Duration(rng.IntN(int(ttl / 10))))
		w := kvevents.Worker{ID: uint64(1 + rng.IntN(4)), Rank: uint32(rng.IntN(2))}
		p := rng.IntN(len(seqs))
		if rng.IntN(4) == 0 {
			a.InsertSeq(w, seqs[p], now)
			for _, s := range seqs[p] {
				model[key{w, s}] = now.UnixNano() + int64(ttl)
			}
			reg++
		} else {
			at := now.Add(-time.Duration(rng.IntN(int(ttl * 3 / 2))))
			a.InsertSeqBooked(w, seqs[p], at, now)
			if exp := at.UnixNano() + int64(ttl); exp > now.UnixNano() {
				for _, s := range seqs[p] {
					model[key{w, s}] = max(model[key{w, s}], exp)
				}
				booked++
			}
		}
		if err := a.Check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		// Sweeps drop pairs in queue order: it must be expiry order.
		for gi := a.gens[0].next; gi != 0 && a.gens[gi].next != 0; gi = a.gens[gi].next {
			if next := a.gens[gi].next; a.gens[next].exp < a.gens[gi].exp {
				t.Fatalf("step %d: generation %d (exp %d) queued after %d (exp %d)", step, next, a.gens[next].exp, gi, a.gens[gi].exp)
			}
		}
		q := seqs[rng.IntN(len(seqs))]
		got := a.AppendMatchesSeq(nil, q, now)
		// The model: per worker, the blocks of q held unexpired from the
		// first.
		var want Overlaps
		for id := uint64(1); id <= 4; id++ {
			for rk := uint32(0); rk < 2; rk++ {
				w := kvevents.Worker{ID: id, Rank: rk}
				n := 0
				for n < len(q) && model[key{w, q[n]}] > now.UnixNano() {
					n++
				}
				if n > 0 {
					want = append(want, Overlap{Worker: w, Blocks: n})
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: lookup %v, model %v", step, got, want)
		}
		if a.low != 0 && now.UnixNano() < a.chaos {
			t.Fatalf("step %d: the closure was broken (low %d, chaos %d)", step, a.low, a.chaos)
		}
	}
	if booked < 1000 || reg < 500 {
		t.Fatalf("%d bookings recorded, %d inserts: the test exercises too little", booked, reg)
	}
}
