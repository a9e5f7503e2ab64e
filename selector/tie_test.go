package selector

import (
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// TestTieUtilization: equal costs go to the least utilized candidate
// whatever the random stream; without the knob (Dynamo's) to any tied one.
func TestTieUtilization(t *testing.T) {
	cands := []Candidate{
		{Worker: kvevents.Worker{ID: 1}, Utilization: 0.4},
		{Worker: kvevents.Worker{ID: 2}, Utilization: 0.1},
		{Worker: kvevents.Worker{ID: 3}, Utilization: 0.1},
		{Worker: kvevents.Worker{ID: 4}, Utilization: 0, Overlap: [kvevents.NumTiers]int{}, ActivePrefillTokens: 512},
	}
	req := &Request{ISL: 1024, BlockSize: 64}
	cfg := DefaultConfig()
	if !cfg.TieUtilization {
		t.Fatal("TieUtilization is off by default")
	}
	seen := map[uint64]int{}
	for seed := range uint64(64) {
		res, err := New(cfg).Select(req, cands, rand.New(rand.NewPCG(seed, 1)))
		if err != nil {
			t.Fatal(err)
		}
		w := cands[res.Chosen].Worker.ID
		seen[w]++
		// Worker 4 is the least utilized but costs more (a queue ahead).
		if w != 2 && w != 3 {
			t.Fatalf("seed %d: chose w%d, want w2 or w3 (cost tie, least utilized)", seed, w)
		}
		if p := res.Breakdowns[1].Prob; p != 0.5 || res.Breakdowns[0].Prob != 0 {
			t.Fatalf("seed %d: probabilities %v, %v; want 0 for w1, 0.5 for w2", seed, res.Breakdowns[0].Prob, p)
		}
	}
	if seen[2] == 0 || seen[3] == 0 {
		t.Errorf("w2 and w3 tie exactly but one never won: %v", seen)
	}
	cfg.TieUtilization = false
	seen = map[uint64]int{}
	for seed := range uint64(64) {
		res, err := New(cfg).Select(req, cands, rand.New(rand.NewPCG(seed, 1)))
		if err != nil {
			t.Fatal(err)
		}
		seen[cands[res.Chosen].Worker.ID]++
	}
	if seen[1] == 0 || seen[4] != 0 {
		t.Errorf("random ties: wins %v, want w1..w3 all possible and never w4", seen)
	}
}
