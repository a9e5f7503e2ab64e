package sim

import (
	"fmt"
	"io"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
)

// RegretReport is the regret of a policy that credits overlap (kv,
// kv-full-only, approx) over a run, in prompt blocks,
// with the rules of the frontend's counters (docs/operations.md,
// kvrouter_route_blocks_total and kvrouter_route_lost_blocks_total):
// Prompt, Reachable and Chosen per routing decision (router.RegretOf);
// Actual the cached blocks the engine found at admission (completed
// requests only: one the engine rejects adds to Chosen alone). Lost
// holds the blocks lost by cause: the routing causes (Reachable - Chosen) and, of
// the Chosen blocks the engine did not find, evicted_after_route when a
// Removed or Cleared event of the worker reached the router between the
// decision and the request's completion, else stale.
type RegretReport struct {
	Prompt    int64            `json:"prompt_blocks"`
	Reachable int64            `json:"reachable_blocks"`
	Chosen    int64            `json:"chosen_blocks"`
	Actual    int64            `json:"actual_blocks"`
	Lost      map[string]int64 `json:"lost_blocks"`
}

// regretTally accumulates a RegretReport over one run.
type regretTally struct {
	rep      RegretReport
	chosen   []int32  // per request: its Regret.Chosen, -1 until routed
	epoch    []uint64 // per request: its worker's removal epoch at the decision
	removals []uint64 // per worker: Removed and Cleared events applied
}

func newRegretTally(workers int) *regretTally {
	return &regretTally{rep: RegretReport{Lost: map[string]int64{}}, removals: make([]uint64, workers)}
}

// size makes room for a run of n requests (once; the first route calls it).
func (t *regretTally) size(n int) {
	if len(t.chosen) == n {
		return
	}
	t.chosen, t.epoch = make([]int32, n), make([]uint64, n)
	for i := range t.chosen {
		t.chosen[i] = -1
	}
}

// routed counts request i's decision d.
func (t *regretTally) routed(i int, d *router.Decision) {
	if i < 0 || i >= len(t.chosen) || d.Queued {
		return
	}
	rg := router.RegretOf(d)
	t.rep.Prompt += int64(rg.Prompt)
	t.rep.Reachable += int64(rg.Reachable)
	t.rep.Chosen += int64(rg.Chosen)
	if rg.Lost > 0 {
		t.rep.Lost[rg.Cause.String()] += int64(rg.Lost)
	}
	t.chosen[i] = int32(rg.Chosen)
	if w := d.Worker.ID; w < uint64(len(t.removals)) {
		t.epoch[i] = t.removals[w]
	}
}

// applied notes one KV event delivered to the router.
func (t *regretTally) applied(ev *kvevents.Event) {
	if ev.Kind != kvevents.KindStored && ev.WorkerID < uint64(len(t.removals)) {
		t.removals[ev.WorkerID]++
	}
}

// answered counts request i, completed on worker w with cached tokens
// found at admission (block size B).
func (t *regretTally) answered(i, w, cached, B int) {
	if i < 0 || i >= len(t.chosen) || t.chosen[i] < 0 {
		return
	}
	actual := cached / max(1, B)
	t.rep.Actual += int64(actual)
	if miss := int(t.chosen[i]) - actual; miss > 0 {
		cause := "stale"
		if w >= 0 && w < len(t.removals) && t.removals[w] != t.epoch[i] {
			cause = "evicted_after_route"
		}
		t.rep.Lost[cause] += int64(miss)
	}
}

// regretPolicy is a policy that tallies regret (a routerPolicy of kv,
// kv-full-only or approx).
type regretPolicy interface {
	tally() *regretTally
}

func (rp *routerPolicy) tally() *regretTally { return rp.regret }

// PredictedHitRate is the share of the routed prompt blocks the router
// credited on the chosen worker at its decisions (Chosen / Prompt), and
// ActualHitRate the share the engines found cached (Actual / Prompt);
// both 0 without prompt blocks. On a hybrid model the actual hit is the
// joint one, so a router crediting full attention alone predicts more.
func (r *RegretReport) PredictedHitRate() float64 { return ratio(r.Chosen, r.Prompt) }

// ActualHitRate: see PredictedHitRate.
func (r *RegretReport) ActualHitRate() float64 { return ratio(r.Actual, r.Prompt) }

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// writePredicted prints, per policy with a regret report, the hit rate
// the router predicted against the one the engines delivered.
func (r *Report) writePredicted(w io.Writer) {
	for _, p := range r.Policies {
		if rg := p.Regret; rg != nil && rg.Prompt > 0 {
			fmt.Fprintf(w, "%s: predicted hit rate %.2f%% (blocks credited at decision), actual %.2f%% (engines' cached blocks), over-prediction %d blocks\n",
				p.Policy, 100*rg.PredictedHitRate(), 100*rg.ActualHitRate(), rg.Chosen-rg.Actual)
		}
	}
}
