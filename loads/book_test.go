package loads

import (
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
	searched, repeats := 0, 0
	churn(t, 12, nil, func(t *testing.T, tr *Tracker, i int, rng *rand.Rand, w kvevents.Worker, blocks []uint64) {
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
	}, func(t *testing.T) {
		if searched == 0 || repeats == 0 {
			t.Fatalf("books adding a holder beside others %d, chains with repeats %d: want both", searched, repeats)
		}
		searched, repeats = 0, 0
	})
}
