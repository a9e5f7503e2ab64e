package router

import (
	"errors"
	"fmt"
	"math"

	"github.com/kvrouter/kvrouter/selector"
)

// PeerHintConfig prices peer-KV hints (FeaturePeerKVHints): the least
// lead a peer must have and the link the chosen worker would fetch over.
type PeerHintConfig struct {
	// MinBlocks is the least number of prompt blocks a peer must hold on
	// its device beyond what the chosen worker caches for a hint to be
	// priced. Default selector.DefaultPeerMinBlocks; 0 means 1.
	MinBlocks int `yaml:"min_blocks"`
	// Link is the worker-to-worker KV link a fetch takes, in the
	// onboarding links' units (selector.LinkCost). Default
	// selector.DefaultPeerLink(), the engines' default KV transfer link
	// (25 GB/s, 1 ms per transfer); the simulator and `up` set it from
	// their engines' --kv-transfer-bandwidth and --kv-transfer-latency.
	// Zero is a free link.
	Link selector.LinkCost `yaml:"link"`
}

// DefaultPeerHintConfig returns the defaults.
func DefaultPeerHintConfig() PeerHintConfig {
	return PeerHintConfig{MinBlocks: selector.DefaultPeerMinBlocks, Link: selector.DefaultPeerLink()}
}

// Validate reports every problem with c.
func (c PeerHintConfig) Validate() error {
	var errs []error
	if c.MinBlocks < 0 {
		errs = append(errs, fmt.Errorf("router: peer hints min blocks %d must be >= 0", c.MinBlocks))
	}
	for _, v := range []float64{c.Link.MsPerToken, c.Link.MsPerBatch} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			errs = append(errs, fmt.Errorf("router: peer hints link %v must be finite and >= 0", v))
		}
	}
	return errors.Join(errs...)
}

// peerHint returns the peer-KV hint of request p placed on candidate c
// (bs[chosen]), or nil: the feature is off, the hop is not aggregated
// (a decode hop already receives its prompt by transfer; a prefill hop
// is placed for the prompt it computes), or no peer's blocks pay
// (selector.ChoosePeerHint with the chosen worker's timing model and
// Config.PeerHints).
func (r *Router) peerHint(p *pending, c *selector.Candidate, bs []selector.Breakdown, chosen int) *selector.PeerHint {
	if !r.feat.peerHints || p.req.Hop != HopAggregated || len(p.locals) == 0 {
		return nil
	}
	tm := r.cfg.Selector.Timing
	if ws := r.workers[c.Worker.ID]; ws != nil && ws.timing != nil {
		tm = *ws.timing
	}
	ph := &r.cfg.PeerHints
	h, ok := selector.ChoosePeerHint(bs, chosen, p.isl, r.cfg.BlockSize, ph.MinBlocks, tm, ph.Link)
	if !ok {
		return nil
	}
	return &h
}
