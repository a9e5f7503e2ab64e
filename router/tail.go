package router

import (
	"math"

	"github.com/kvrouter/kvrouter/selector"
)

// tailOn reports whether the selector charges predicted time above the
// fleet's tail (selector.Config.TailWeight; time cost, scoring policies):
// only then does the router keep the estimate.
func (r *Router) tailOn() bool {
	s := &r.cfg.Selector
	return s.TailWeight > 0 && s.Cost == selector.CostTime && !r.cfg.Policy.blind()
}

// observeTail feeds the hop's tail estimate the fastest predicted time to
// first token among the scored candidates of a decision: what the request
// would wait at best, whatever its cache, so the estimate does not follow
// the choices it guards.
func (r *Router) observeTail(h Hop, bs []selector.Breakdown) {
	best := math.Inf(1)
	for i := range bs {
		if bs[i].Out == selector.ReasonNone {
			best = min(best, bs[i].Prefill+bs[i].Decode)
		}
	}
	r.tail[h].Observe(best, r.cfg.Selector.Tail())
}
