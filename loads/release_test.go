package loads

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// naiveRelease is release's block loop before releaseBlocks: every block
// in turn, one reference of s dropped through find. It works on copies.
func naiveRelease(nodes []node, deadList []int32, rn []int32, s int32) (dropped, died int, _ []int32) {
	for _, ni := range rn {
		nd := &nodes[ni]
		hd := nd.find(s)
		if hd.refs--; hd.refs > 0 {
			continue
		}
		nd.drop(hd)
		dropped++
		if nd.first.refs == 0 {
			died++
			if !nd.listed {
				nd.listed = true
				deadList = append(deadList, ni)
			}
		}
	}
	return dropped, died, deadList
}

func cloneNodes(nodes []node) []node {
	c := slices.Clone(nodes)
	for i := range c {
		c[i].rest = slices.Clone(c[i].rest)
	}
	return c
}

// releaseBlocks (the dead suffix in a leaf loop, the rest block by block)
// leaves the nodes, the dead list and the counts exactly as the per-block
// loop does, at every release of a random workload: requests on several
// ranks sharing prefixes (so blocks have several holders and several
// references), released in random order, with dead-node collection.
func TestReleaseBlocksMatchesNaive(t *testing.T) {
	sole, shared := 0, 0
	churn(t, 11, func(t *testing.T, tr *Tracker, i int, id string) {
		r := tr.reqs[id]
		nodes, dl := cloneNodes(tr.nodes), slices.Clone(tr.deadList)
		wd, wdied, wdl := naiveRelease(nodes, dl, r.nodes, r.slot)
		probe := *tr
		probe.nodes, probe.deadList = cloneNodes(tr.nodes), slices.Clone(tr.deadList)
		k0, _ := releaseSole(cloneNodes(tr.nodes), r.nodes, r.slot)
		if k0 < len(r.nodes) {
			sole++
		}
		if k0 > 0 {
			shared++
		}
		gd, gdied := probe.releaseBlocks(r.nodes, r.slot)
		if gd != wd || gdied != wdied {
			t.Fatalf("op %d: release of %s: dropped, died = %d, %d; naive %d, %d", i, id, gd, gdied, wd, wdied)
		}
		if !reflect.DeepEqual(probe.nodes, nodes) {
			t.Fatalf("op %d: release of %s: nodes differ from the naive loop's", i, id)
		}
		if !slices.Equal(probe.deadList, wdl) {
			t.Fatalf("op %d: release of %s: dead list %v, naive %v", i, id, probe.deadList, wdl)
		}
	}, nil, func(t *testing.T) {
		// Both paths ran: some releases had a dead suffix, some a
		// shared prefix.
		if sole == 0 || shared == 0 {
			t.Fatalf("releases with a dead suffix %d, with a shared prefix %d: want both", sole, shared)
		}
		sole, shared = 0, 0
	})
}

// churn runs, for 3 seeds, a random workload of 1500 operations on a
// tracker: requests on several ranks sharing prefixes (so blocks have
// several holders and several references), at most 12 active, released
// in random order, with dead-node collection. Before each Free it calls
// free (if not nil), before each Add add (if not nil) with the request's
// worker and blocks, and after each seed done.
func churn(t *testing.T, stream uint64,
	free func(t *testing.T, tr *Tracker, i int, id string),
	add func(t *testing.T, tr *Tracker, i int, rng *rand.Rand, w kvevents.Worker, blocks []uint64),
	done func(t *testing.T)) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			tr := New(DefaultConfig())
			rng := rand.New(rand.NewPCG(seed, stream))
			ws := []kvevents.Worker{{ID: 1}, {ID: 2}, {ID: 2, Rank: 1}, {ID: 3}}
			var active []string
			for i := range 1500 {
				if len(active) > 0 && (len(active) > 12 || rng.IntN(2) == 0) {
					k := rng.IntN(len(active))
					id := active[k]
					active = slices.Delete(active, k, k+1)
					if free != nil {
						free(t, tr, i, id)
					}
					if err := tr.Free(id); err != nil {
						t.Fatal(err)
					}
					continue
				}
				w, blocks := ws[rng.IntN(len(ws))], randomChain(rng, 1+rng.IntN(40))
				if add != nil {
					add(t, tr, i, rng, w, blocks)
				}
				id := fmt.Sprint("r", i)
				if err := tr.Add(Entry{ID: id, Worker: w, Blocks: blocks, PrefillTokens: 5}, epoch); err != nil {
					t.Fatal(err)
				}
				active = append(active, id)
			}
			done(t)
		})
	}
}
