package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/trace"
)

// With Router.TrackOutputBlocks the simulated router charges the running
// average of completed requests' output lengths (what serve knows without
// a hint): nothing for the first request, then the first one's 10 blocks
// (640 tokens at B = 64) for the second, whose own output is 1 token.
// ExactOutput charges each request's own length instead.
func TestSimOutputEstimate(t *testing.T) {
	recs := []trace.Record{
		{Timestamp: 0, InputLength: 512, OutputLength: 640, HashIDs: []uint64{1}},
		{Timestamp: 1, InputLength: 512, OutputLength: 1, HashIDs: []uint64{2}},
	}
	charged := func(exact bool) [2]int {
		cfg := smallConfig(recs, 1)
		cfg.Router.TrackOutputBlocks = true
		cfg.ExactOutput = exact
		p := prepare(&cfg)
		rp, err := newRouterPolicy(&cfg, router.PolicyLoad, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		var out [2]int
		for i := range 2 {
			if _, _, err := rp.route(&p, i, 0); err != nil {
				t.Fatal(err)
			}
			// Prompt blocks are 512/64 = 8; the rest is charged output.
			out[i] = rp.r.Load(kvevents.Worker{ID: 0}).DecodeBlocks - 8
			rp.free(i, 0)
		}
		return out
	}
	if got := charged(false); got != [2]int{0, 10} {
		t.Errorf("average: charged output blocks %v, want [0 10]", got)
	}
	if got := charged(true); got != [2]int{10, 1} {
		t.Errorf("exact: charged output blocks %v, want [10 1]", got)
	}
}
