package router

import (
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/selector"
)

// Cause says why a routed request's chosen worker held less of its prompt
// than the best candidate did (Regret.Cause).
type Cause uint8

const (
	CauseNone        Cause = iota // no blocks lost: the chosen worker held the most
	CauseLoad                     // a holder was scored, a cheaper worker won
	CauseTemperature              // a holder was cheapest, sampling at temperature > 0 chose another
	CauseBusy                     // every holder was over a busy threshold
	CauseFilter                   // every holder failed a hard constraint (allow, pin, rank, label)
	CauseQueue                    // the request waited in the queue and was placed from it elsewhere
	CauseAffinity                 // the session binding chose the worker
	NumCauses
)

var causeNames = [...]string{"", "load", "temperature", "busy", "filter", "queue", "affinity"}

func (c Cause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "cause?"
}

// Regret is what one decision left on the table, in prompt blocks.
// Reachable is the deepest prefix any candidate of the hop held (the
// deepest of its device, host and disk tiers; the fleet's shared G4 chain
// is everyone's and does not count), whether or not it passed the
// filters; Chosen is the same measure on the chosen worker; Lost =
// Reachable - Chosen, attributed to one Cause.
type Regret struct {
	Prompt, Reachable, Chosen, Lost int
	Cause                           Cause
}

// ChosenBlocks is the prefix of d's prompt the chosen worker holds in any
// tier, at most the prompt's full blocks: Regret.Chosen, without scanning
// the candidates.
func (d *Decision) ChosenBlocks() int { return min(heldBlocks(&d.Overlap), d.Blocks) }

// heldBlocks is a candidate's deepest prefix in its own tiers.
func heldBlocks(ov *[kvevents.NumTiers]int) int {
	return max(ov[kvevents.TierDevice], ov[kvevents.TierHostPinned], ov[kvevents.TierDisk])
}

// costTie reports whether two costs tie (relative 1e-9, the selector's
// tie rule in form).
func costTie(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	m := max(1, a, -a)
	return d <= 1e-9*m
}

// RegretOf attributes d's lost blocks to a cause, from d's candidates
// alone (pure; any caller holding a Decision can compute it). Rules, in
// order, once Lost > 0: a decision placed from the queue (d.Waited) ->
// queue; a session binding (d.Affinity) -> affinity; else among the
// holders (the candidates holding Reachable blocks): one scored whose
// cost was the lowest scored cost while the chosen one's was not ->
// temperature (only sampling picks above the minimum); one scored ->
// load; one out as busy -> busy; else filter. A queued decision, or one
// without a worker, has no regret (zero value).
func RegretOf(d *Decision) Regret {
	if d.Queued || len(d.Candidates) == 0 {
		return Regret{}
	}
	rg := Regret{Prompt: d.Blocks}
	chosen := -1
	cmin := 0.0
	scored := false
	for i := range d.Candidates {
		c := &d.Candidates[i]
		rg.Reachable = max(rg.Reachable, heldBlocks(&c.Overlap))
		if c.Out == selector.ReasonNone {
			if !scored || c.Cost < cmin {
				cmin = c.Cost
			}
			scored = true
			if chosen < 0 && c.Worker == d.Worker {
				chosen = i
			}
		}
	}
	rg.Chosen = d.ChosenBlocks()
	rg.Reachable = min(max(rg.Reachable, rg.Chosen), d.Blocks)
	rg.Lost = rg.Reachable - rg.Chosen
	if rg.Lost == 0 {
		return rg
	}
	switch {
	case d.Waited:
		rg.Cause = CauseQueue
		return rg
	case d.Affinity:
		rg.Cause = CauseAffinity
		return rg
	}
	chosenMin := chosen >= 0 && costTie(d.Candidates[chosen].Cost, cmin)
	busy, load, temp := false, false, false
	for i := range d.Candidates {
		c := &d.Candidates[i]
		if min(heldBlocks(&c.Overlap), d.Blocks) < rg.Reachable {
			continue
		}
		switch {
		case c.Out == selector.ReasonNone && !chosenMin && costTie(c.Cost, cmin):
			temp = true
		case c.Out == selector.ReasonNone:
			load = true
		case c.Out.Overload():
			busy = true
		}
	}
	switch {
	case temp:
		rg.Cause = CauseTemperature
	case load:
		rg.Cause = CauseLoad
	case busy:
		rg.Cause = CauseBusy
	default:
		rg.Cause = CauseFilter
	}
	return rg
}
