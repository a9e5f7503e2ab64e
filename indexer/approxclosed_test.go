package indexer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// TestApproxClosedLookupMatchesWalk replays seeded random inserts with now
// stepping forward, standing still and (sometimes) going backwards, with
// size-bound pruning and worker removal, and after every operation looks
// prompts up both ways: whenever Approx takes the galloping lookup (low ==
// 0, or at or after chaos) its result must equal the block-by-block
// walk's. Over the seeds, both regimes must occur, and so must a return
// to the closed one after a backwards step or a prune.
func TestApproxClosedLookupMatchesWalk(t *testing.T) {
	for _, back := range []int{0, 40} {
		for _, maxBlocks := range []int{1 << 20, 60} {
			t.Run(fmt.Sprintf("back=%d/max=%d", back, maxBlocks), func(t *testing.T) {
				var sum closedCounts
				for seed := range uint64(10) {
					sum.add(approxClosedVsWalk(t, back, maxBlocks, rand.New(rand.NewPCG(seed, 3))))
				}
				t.Logf("%+v", sum)
				if sum.closed == 0 {
					t.Fatal("no lookup took the galloping walk")
				}
				if (back > 0 || maxBlocks < 100) && (sum.open == 0 || sum.reclosed == 0) {
					t.Fatalf("backwards steps or pruning: %+v", sum)
				}
			})
		}
	}
}

// closedCounts counts lookups that galloped, lookups that could not, and
// runs that galloped again after they could not.
type closedCounts struct{ closed, open, reclosed int }

func (c *closedCounts) add(d closedCounts) {
	c.closed, c.open, c.reclosed = c.closed+d.closed, c.open+d.open, c.reclosed+d.reclosed
}

// approxClosedVsWalk: back is the chance in 1000 that an insert's now
// goes back.
func approxClosedVsWalk(t *testing.T, back, maxBlocks int, rng *rand.Rand) closedCounts {
	const ttl = 4 * time.Second
	a := NewApprox(ApproxConfig{TTL: ttl, MaxBlocks: maxBlocks, PruneFraction: 0.5})
	prompt := func() []uint64 {
		p := make([]uint64, 1+rng.IntN(12))
		for i := range p {
			p[i] = uint64(1 + rng.IntN(2))
		}
		return kvhash.SeqHashes(p)
	}
	now := time.Unix(1000, 0)
	var c closedCounts
	for step := range 600 {
		switch op := rng.IntN(20); {
		case op < 12:
			switch r := rng.IntN(1000); {
			case r < back:
				now = now.Add(-time.Duration(rng.Int64N(int64(ttl))))
			case r < 600:
				now = now.Add(time.Duration(rng.Int64N(int64(ttl) / 8)))
			}
			a.InsertSeq(kvevents.Worker{ID: uint64(1 + rng.IntN(6)), Rank: uint32(rng.IntN(2))}, prompt(), now)
		case op < 19:
			// Several lookups, each at a random instant around now.
			for range 4 {
				p := prompt()
				at := now.Add(time.Duration(rng.Int64N(int64(2*ttl)) - int64(ttl/2))).UnixNano()
				if a.low != 0 && at < a.chaos {
					c.open++
					continue
				}
				if c.open > 0 {
					c.reclosed = 1
				}
				c.closed++
				got := a.appendMatchesClosed(nil, p, at)
				if want := a.appendMatchesWalk(nil, p, true, at); !slices.Equal(got, want) {
					t.Fatalf("step %d: closed lookup %v, walk %v", step, got, want)
				}
			}
		default:
			a.RemoveWorker(uint64(1 + rng.IntN(6)))
		}
		if err := a.Check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	return c
}
