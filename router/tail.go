package router

import (
	"math"

	"github.com/kvrouter/kvrouter/selector"
)

// observeTail feeds the hop's tail estimate (FeatureTailGuard) the
// fastest predicted time to first token among the scored candidates of a
// decision: what the request would wait at best, whatever its cache, so
// the estimate does not follow the choices it guards.
func (r *Router) observeTail(h Hop, bs []selector.Breakdown) {
	best := math.Inf(1)
	for i := range bs {
		if bs[i].Out == selector.ReasonNone {
			best = min(best, bs[i].Prefill+bs[i].Decode)
		}
	}
	r.tail[h].Observe(best, selector.TailQuantile)
}
