package router

import (
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/selector"
)

// Onboarding loads on the workers' links (selector.Onboard, DESIGN.md §7).
// A decision that credits lower-tier blocks books their load time on the
// chosen rank's link of each tier: loads on one link serialize, so a
// second request onboarding on the same worker waits behind the first
// (selector.Candidate.LinkBacklog). The backlog is a time, not a booking
// released by PrefillDone or Free: it drains as the clock passes, so a
// failed request's load is charged until it would have landed.

// linkState is one rank's booked loads: when each tier's link is free.
type linkState [kvevents.NumTiers]time.Time

// linkBacklog fills c.LinkBacklog from ws's rank at now.
func linkBacklog(ws *workerState, rank uint32, now time.Time, c *selector.Candidate) {
	c.LinkBacklog = [kvevents.NumTiers]float64{}
	if int(rank) >= len(ws.links) {
		return
	}
	for t, free := range ws.links[rank] {
		if d := free.Sub(now); d > 0 {
			c.LinkBacklog[t] = float64(d) / float64(time.Millisecond)
		}
	}
}

// bookLoads books the chosen candidate's loads on its rank's links.
func (r *Router) bookLoads(c *selector.Candidate, now time.Time) {
	cfg := &r.cfg.Selector
	if cfg.Onboard.IsZero() {
		return
	}
	ms := selector.OnboardTimes(cfg, &c.Overlap, r.cfg.BlockSize)
	if ms == ([kvevents.NumTiers]float64{}) {
		return
	}
	ws := r.workers[c.Worker.ID]
	if ws == nil {
		return
	}
	if len(ws.links) < ws.info.DPSize {
		ws.links = append(ws.links, make([]linkState, ws.info.DPSize-len(ws.links))...)
	}
	if int(c.Worker.Rank) >= len(ws.links) {
		return
	}
	l := &ws.links[c.Worker.Rank]
	for t, d := range ms {
		if d <= 0 {
			continue
		}
		start := l[t]
		if start.Before(now) {
			start = now
		}
		l[t] = start.Add(time.Duration(d * float64(time.Millisecond)))
	}
}
