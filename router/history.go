package router

import (
	"time"

	"github.com/kvrouter/kvrouter/indexer"
)

// The routing history (Config.Predict.HistoryTTL, PolicyKV): every
// decision's blocks, kept for HistoryTTL in an approximate index of their
// own, as PolicyApprox keeps them. The events say what a worker holds;
// the history says what it recently held, which the selector credits at
// its own weight (selector Config.HistoryWeight, HistoryTie) beyond what
// the events say.

// newHistory returns the history index of cfg, nil when off.
func newHistory(cfg Config) *indexer.Approx {
	if cfg.Policy != PolicyKV || cfg.Predict.HistoryTTL <= 0 {
		return nil
	}
	pc := cfg.Index.Approx
	pc.TTL = cfg.Predict.HistoryTTL
	return indexer.NewApprox(pc)
}

// lookupHistory fills r.hist with the history's overlaps of p at now.
func (r *Router) lookupHistory(p *pending, now time.Time) {
	r.hist = r.hist[:0]
	if r.history != nil && r.wantsOverlap(&p.req) && len(p.locals) > 0 {
		r.hist = r.history.AppendMatchesSeq(r.hist, p.ids, now)
	}
}
