package loads

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// naiveBookHeld is bookHeld before it relied on prefix closure: every
// node searched for s. It works on the nodes given.
func naiveBookHeld(nodes []node, rn []int32, s int32) (held, unheld int) {
	for _, ni := range rn {
		nd := &nodes[ni]
		if nd.first.refs == 0 {
			nd.first = holder{slot: s, refs: 1}
			unheld++
		} else if hd := nd.find(s); hd != nil {
			hd.refs++
		} else {
			nd.add(s)
			held++
		}
	}
	return held, unheld
}

// bookUnheld then bookHeld (no search past the first node lacking s, but
// for the nodes the same Add booked) leave the nodes and
// the counts exactly as the per-node search does, before every Add of a
// random workload with requests on several ranks sharing prefixes, and on
// chains naming a node twice (a chain's repeat is booked against the
// nodes the same call already gave s).
func TestBookHeldMatchesNaive(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			tr := New(DefaultConfig())
			rng := rand.New(rand.NewPCG(seed, 12))
			ws := []kvevents.Worker{{ID: 1}, {ID: 2}, {ID: 2, Rank: 1}, {ID: 3}}
			var active []string
			searched, repeats := 0, 0
			for i := range 1500 {
				if len(active) > 0 && (len(active) > 12 || rng.IntN(2) == 0) {
					k := rng.IntN(len(active))
					if err := tr.Free(active[k]); err != nil {
						t.Fatal(err)
					}
					active = slices.Delete(active, k, k+1)
					continue
				}
				w := ws[rng.IntN(len(ws))]
				blocks := randomChain(rng, 1+rng.IntN(40))
				chain := blocks
				if rng.IntN(4) == 0 {
					chain = append(slices.Clone(blocks), blocks[:1+rng.IntN(len(blocks))]...)
					repeats++
				}
				probe := *tr
				probe.nodes, probe.freeNodes = cloneNodes(tr.nodes), slices.Clone(tr.freeNodes)
				probe.index.slots = slices.Clone(tr.index.slots)
				s := tr.slotFor(w) // Add assigns it too; the probe shares slotOf
				rn := make([]int32, len(chain))
				for j, h := range chain {
					rn[j], _ = probe.nodeOf(h)
				}
				got, want := cloneNodes(probe.nodes), cloneNodes(probe.nodes)
				ser := tr.books + 1
				u := bookUnheld(got, rn, s, ser)
				gh, gu := bookHeld(got, rn[u:], s, ser)
				gu += u
				wh, wu := naiveBookHeld(want, rn, s)
				if gh != wh || gu != wu {
					t.Fatalf("op %d: held, unheld = %d, %d; naive %d, %d", i, gh, gu, wh, wu)
				}
				for j := range got {
					got[j].seen = want[j].seen // the naive loop keeps no serials
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("op %d: nodes differ from the naive loop's", i)
				}
				if gh > 0 {
					searched++
				}
				id := fmt.Sprint("r", i)
				if err := tr.Add(Entry{ID: id, Worker: w, Blocks: blocks, PrefillTokens: 5}, epoch); err != nil {
					t.Fatal(err)
				}
				active = append(active, id)
			}
			if searched == 0 || repeats == 0 {
				t.Fatalf("books adding a holder beside others %d, chains with repeats %d: want both", searched, repeats)
			}
		})
	}
}
