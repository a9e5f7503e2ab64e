package selector

import (
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// TestHistoryCredit pins the routing history's credit: HistoryWeight per
// history block beyond every tier's prefix (decay applied), nothing for
// history the tiers already cover, nothing with the weight at 0.
func TestHistoryCredit(t *testing.T) {
	ov := func(dev, host int) [kvevents.NumTiers]int {
		var o [kvevents.NumTiers]int
		o[kvevents.TierDevice], o[kvevents.TierHostPinned] = dev, host
		return o
	}
	for _, tc := range []struct {
		name            string
		weight, decay   float64
		dev, host, hist int
		want            float64 // total credit
	}{
		{"beyond device", 0.5, 0, 10, 0, 30, 10 + 0.5*20},
		{"beyond host", 0.5, 0, 10, 25, 30, 10 + 0.75*15 + 0.5*5},
		{"covered", 0.5, 0, 30, 0, 20, 30},
		{"off", 0, 0, 10, 0, 30, 10},
		// Decay 1 at one request of excess backlog halves the device
		// credit, and the history's with it.
		{"decayed", 0.5, 1, 10, 0, 30, 0.5 * (10 + 0.5*20)},
	} {
		cfg := DefaultConfig()
		cfg.HistoryWeight, cfg.CreditDecay = tc.weight, tc.decay
		c := Candidate{Overlap: ov(tc.dev, tc.host), History: tc.hist, ActivePrefillTokens: 32 * 64}
		b := Cost(cfg, 32*64, 64, 0, 0, &c)
		if b.Credit != tc.want {
			t.Errorf("%s: credit %v, want %v", tc.name, b.Credit, tc.want)
		}
		c.History = 0
		if b0 := Cost(cfg, 32*64, 64, 0, 0, &c); tc.hist > tc.dev && tc.hist > tc.host && tc.weight > 0 && !(b.Cost < b0.Cost) {
			t.Errorf("%s: cost %v with the history, %v without: the history should lower it", tc.name, b.Cost, b0.Cost)
		}
	}
}

// TestHistoryTie: within HistoryTie of the lowest cost, the candidate
// whose routing history holds the deeper prefix wins although it costs a
// little more; beyond the tolerance, or with the knob off, the lowest cost
// wins; without any history (other policies) the pick is as before.
func TestHistoryTie(t *testing.T) {
	cands := []Candidate{
		{Worker: kvevents.Worker{ID: 1}},
		{Worker: kvevents.Worker{ID: 2}, ActivePrefillTokens: 64, History: 8},
		{Worker: kvevents.Worker{ID: 3}, ActivePrefillTokens: 64, History: 4},
	}
	req := &Request{ISL: 4096, BlockSize: 64}
	cfg := DefaultConfig()
	b := func(i int) float64 { return Cost(cfg, req.ISL, req.BlockSize, 0, 0, &cands[i]).Cost }
	gap := (b(1) - b(0)) / b(0)
	if !(gap > 0) || b(1) != b(2) {
		t.Fatalf("costs %v %v %v: want w1 cheapest, w2 = w3", b(0), b(1), b(2))
	}
	pick := func(tie float64, cs []Candidate) uint64 {
		c := cfg
		c.HistoryTie = tie
		res, err := New(c).Select(req, cs, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return cs[res.Chosen].Worker.ID
	}
	if w := pick(2*gap, cands); w != 2 {
		t.Errorf("tie %v (twice the gap): chose w%d, want w2 (deepest history)", 2*gap, w)
	}
	if w := pick(gap/2, cands); w != 1 {
		t.Errorf("tie %v (half the gap): chose w%d, want w1 (lowest cost)", gap/2, w)
	}
	if w := pick(0, cands); w != 1 {
		t.Errorf("tie off: chose w%d, want w1", w)
	}
	none := append([]Candidate(nil), cands...)
	for i := range none {
		none[i].History = 0
	}
	if w := pick(2*gap, none); w != 1 {
		t.Errorf("no history: chose w%d, want w1 (lowest cost)", w)
	}
}
