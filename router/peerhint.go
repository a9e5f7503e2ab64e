package router

import "github.com/kvrouter/kvrouter/selector"

// peerHint returns the peer-KV hint of request p placed on candidate c
// (bs[chosen]), or nil: the feature is off, the hop is not aggregated
// (a decode hop already receives its prompt by transfer; a prefill hop
// is placed for the prompt it computes), or no peer's blocks pay
// (selector.ChoosePeerHint with the chosen worker's timing model).
func (r *Router) peerHint(p *pending, c *selector.Candidate, bs []selector.Breakdown, chosen int) *selector.PeerHint {
	if !r.feat.peerHints || p.req.Hop != HopAggregated || len(p.locals) == 0 {
		return nil
	}
	tm := r.cfg.Selector.Timing
	if ws := r.workers[c.Worker.ID]; ws != nil && ws.timing != nil {
		tm = *ws.timing
	}
	h, ok := selector.ChoosePeerHint(bs, chosen, p.isl, r.cfg.BlockSize, selector.DefaultPeerMinBlocks, tm, selector.DefaultPeerLink())
	if !ok {
		return nil
	}
	return &h
}
