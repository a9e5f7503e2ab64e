package selector

import (
	"math"
	"math/rand/v2"

	"github.com/kvrouter/kvrouter/kvevents"
)

// historyCredit is the credit of the blocks the candidate's routing
// history holds (Candidate.History) beyond every tier's prefix: blocks
// the events say the worker no longer holds, at HistoryWeight each (the
// device credit's decay applies).
func historyCredit(cfg *Config, c *Candidate, decay float64) float64 {
	if cfg.HistoryWeight <= 0 || c.History <= 0 {
		return 0
	}
	held := 0
	for t := range kvevents.NumTiers {
		held = max(held, c.Overlap[t])
	}
	return cfg.HistoryWeight * decay * float64(max(0, c.History-held))
}

// historyHeld is the prefix the candidate's routing history holds (a
// policy without a history ties as before).
func historyHeld(c *Candidate) int { return c.History }

// pickHistory is the temperature-0 pick with Config.HistoryTie: among the
// scored candidates within HistoryTie (relative) of the lowest cost, those
// holding or having held the deepest prefix of the request (historyHeld)
// stay; the lowest cost among them wins, ties as usual.
func pickHistory(cfg *Config, bs []Breakdown, cands []Candidate, cmin float64, rng *rand.Rand) int {
	cut := cmin + max(tieEps*max(1, math.Abs(cmin)), cfg.HistoryTie*math.Abs(cmin))
	hmax := -1
	for i := range bs {
		if bs[i].Out == ReasonNone && bs[i].Cost <= cut {
			hmax = max(hmax, historyHeld(&cands[i]))
		}
	}
	in := func(i int) bool {
		return bs[i].Out == ReasonNone && bs[i].Cost <= cut && historyHeld(&cands[i]) == hmax
	}
	m := math.Inf(1)
	for i := range bs {
		if in(i) {
			m = min(m, bs[i].Cost)
		}
	}
	eps := tieEps * max(1, math.Abs(m))
	tied := func(i int) bool { return in(i) && bs[i].Cost-m <= eps }
	if !cfg.TieUtilization {
		return drawTied(bs, tied, rng)
	}
	umin := math.Inf(1)
	for i := range bs {
		if tied(i) {
			umin = min(umin, cands[i].Utilization)
		}
	}
	return drawTied(bs, func(i int) bool { return tied(i) && cands[i].Utilization <= umin }, rng)
}
