package router

import (
	"maps"
	"slices"

	"github.com/kvrouter/kvrouter/selector"
)

// Inputs are what the selector saw when it scored one request: enough to
// score it again without the index or the loads (a decision log's replay).
// A caller that wants them sets Request.Inputs to a zero Inputs; the
// router fills it (deep copies) and hands it back in Decision.Inputs. It
// stays unfilled (Filled false) for the blind policies, which do not
// score.
type Inputs struct {
	Filled bool
	// Config is the selector's configuration (the router's Selector).
	Config selector.Config
	// Request and Candidates are the selector's arguments, candidates in
	// rank order as Decision.Candidates.
	Request    selector.Request
	Candidates []selector.Candidate
	// Chosen is the selector's pick, before session affinity.
	Chosen int
}

// fill copies the selector's arguments into in; the router reuses its own
// buffers, so every slice, map and pointer is copied.
func (in *Inputs) fill(cfg selector.Config, req *selector.Request, cands []selector.Candidate, chosen int) {
	in.Filled, in.Config, in.Request, in.Chosen = true, cfg, *req, chosen
	in.Request.Constraints.Allow = slices.Clone(req.Constraints.Allow)
	in.Request.Constraints.Labels = maps.Clone(req.Constraints.Labels)
	in.Candidates = make([]selector.Candidate, len(cands))
	for i, c := range cands {
		c.Labels = maps.Clone(c.Labels)
		c.LoRAs = slices.Clone(c.LoRAs)
		c.PassQueue = slices.Clone(c.PassQueue)
		if c.Timing != nil {
			t := *c.Timing
			c.Timing = &t
		}
		in.Candidates[i] = c
	}
}
