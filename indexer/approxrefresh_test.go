package indexer

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// approxState is everything of an Approx but its lock, its test switch
// and its refreshRun counter, for comparing two.
func approxState(a *Approx) []any {
	return []any{
		a.ttl, a.maxBlocks, a.pruneTo, a.m, a.entries, a.freeEntry, a.slots, a.counts,
		a.gens, a.freeGen, a.blocks, a.memberCap, a.listCap, a.compacted, a.expired,
		a.pruned, a.maxExp, a.chaos, a.low, a.last,
	}
}

// refreshRun (the leaf loop over a refreshed run) leaves an Approx in
// exactly the state insert's general loop alone does, down to every
// member, generation list, free list and cache: seeded random InsertSeq,
// InsertSeqBooked (bookings ending out of order, some already expired),
// local-hash Insert, lookups and worker removal, with prompts sharing
// prefixes booked on a few workers (and some not chains), time mostly advancing (sometimes
// standing still or going back), and a size bound that prunes.
func TestApproxRefreshRunMatchesGeneralLoop(t *testing.T) {
	const ttl = 100 * time.Millisecond
	for _, maxBlocks := range []int{1 << 20, 120} {
		for seed := range uint64(6) {
			t.Run(fmt.Sprintf("max=%d/seed=%d", maxBlocks, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 21))
				cfg := ApproxConfig{TTL: ttl, MaxBlocks: maxBlocks, PruneFraction: 0.5}
				fast, slow := NewApprox(cfg), NewApprox(cfg)
				slow.noRefreshRun = true
				var chains [][]uint64
				for p := range 12 {
					var locals []uint64
					if p > 0 && rng.IntN(4) > 0 {
						o := chains[rng.IntN(len(chains))]
						locals = append(locals, o[:rng.IntN(len(o)+1)]...)
					}
					for len(locals) < 1+rng.IntN(30) {
						locals = append(locals, rng.Uint64())
					}
					chains = append(chains, locals)
				}
				now := time.Unix(100, 0)
				for op := range 3000 {
					switch d := rng.IntN(40); {
					case d < 30:
						now = now.Add(time.Duration(rng.IntN(4)) * time.Millisecond)
					case d < 31:
						now = now.Add(-time.Duration(rng.IntN(10)) * time.Millisecond)
					}
					w := kvevents.Worker{ID: uint64(1 + rng.IntN(3))}
					c := chains[rng.IntN(len(chains))]
					seqs := kvhash.SeqHashes(c)
					switch k := rng.IntN(20); {
					case k < 10:
						fast.InsertSeq(w, seqs, now)
						slow.InsertSeq(w, seqs, now)
					case k < 17:
						booked := now.Add(-time.Duration(rng.IntN(150)) * time.Millisecond)
						fast.InsertSeqBooked(w, seqs, booked, now)
						slow.InsertSeqBooked(w, seqs, booked, now)
					case k < 18:
						fast.Insert(w, c, now)
						slow.Insert(w, c, now)
					case k < 19:
						// Not a chain (as TestApproxNotChains): the
						// prompt without its first blocks, or reversed,
						// so that inserts take pairs from the middle of
						// older lists, which refreshRun must leave to
						// the general loop.
						odd := seqs[rng.IntN(len(seqs)):]
						if rng.IntN(2) == 0 {
							odd = slices.Clone(seqs)
							slices.Reverse(odd)
						}
						fast.InsertSeq(w, odd, now)
						slow.InsertSeq(w, odd, now)
					case k == 19:
						fast.RemoveWorker(w.ID)
						slow.RemoveWorker(w.ID)
					}
					if !reflect.DeepEqual(approxState(fast), approxState(slow)) {
						t.Fatalf("op %d: state differs from the general loop's", op)
					}
					// Block by block: lists not chains may break the
					// prefix closure the galloping lookup relies on.
					fast.mu.RLock()
					got := fast.appendMatchesWalk(nil, seqs, true, now.UnixNano())
					fast.mu.RUnlock()
					slow.mu.RLock()
					want := slow.appendMatchesWalk(nil, seqs, true, now.UnixNano())
					slow.mu.RUnlock()
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("op %d: matches %v, general loop %v", op, got, want)
					}
				}
				if fast.refreshed == 0 || slow.refreshed != 0 {
					t.Fatalf("refreshRun refreshed %d pairs (want > 0), %d with it off (want 0)", fast.refreshed, slow.refreshed)
				}
			})
		}
	}
}
