package frontend

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// Fallback is a worker a proxy may try after the pick (the Endpoint
// Picker Protocol's endpoint list), with the rank the router would use.
type Fallback struct {
	Worker Worker
	Rank   kvevents.Worker
}

// fallbacks returns up to n workers other than the chosen one, the
// cheapest first by their best rank's cost: only candidates the router
// scored (not filtered out: the request's constraints and busy thresholds
// hold for them too).
func (s *Server) fallbacks(d *router.Decision, n int) []Fallback {
	if n <= 0 {
		return nil
	}
	var ranked []*selector.Breakdown
	for i := range d.Candidates {
		if c := &d.Candidates[i]; c.Out == selector.ReasonNone && c.Worker.ID != d.Worker.ID {
			ranked = append(ranked, c)
		}
	}
	slices.SortFunc(ranked, func(a, b *selector.Breakdown) int {
		return cmp.Or(cmp.Compare(a.Cost, b.Cost), cmp.Compare(a.Worker.ID, b.Worker.ID))
	})
	var out []Fallback
	for _, b := range ranked { // a worker's first rank here is its cheapest
		if len(out) == n {
			break
		}
		if slices.ContainsFunc(out, func(f Fallback) bool { return f.Worker.ID == b.Worker.ID }) {
			continue
		}
		if w, ok := s.pool.Get(b.Worker.ID); ok {
			out = append(out, Fallback{Worker: *w, Rank: b.Worker})
		}
	}
	return out
}

// ServedBy moves the request's load to the fallback the proxy reports
// served it (the pick failed and the proxy's retry went down the list):
// the booking on the picked worker is released and the request booked on
// the fallback's rank, so the loads stay true. It returns false when
// worker is neither the pick nor one of its fallbacks; an error when the
// router would not book it there (gone, or busy since the pick: the
// request then carries no load; Done still counts it).
func (p *Picked) ServedBy(worker uint64, now time.Time) (bool, error) {
	if p.f.done || worker == p.Worker.ID {
		return worker == p.Worker.ID, nil
	}
	i := slices.IndexFunc(p.Fallbacks, func(f Fallback) bool { return f.Worker.ID == worker })
	if i < 0 {
		return false, nil
	}
	f := p.Fallbacks[i]
	s, j := p.s, p.j
	_ = s.rt.Fail(p.ID, now) // the picked worker failed the proxy
	req := s.routerRequest(j, p.ID, router.HopAggregated)
	req.Constraints.Pin = &f.Rank
	d, err := s.rt.Route(context.Background(), req, now)
	if err == nil && d.Queued {
		_ = s.rt.Free(p.ID, now)
		err = fmt.Errorf("frontend: worker %d busy: request queued", worker)
	}
	s.kickSettle() // the booking (settle.go)
	// Its TTFT includes the failed attempt: no timing-fit observation.
	p.f.fit = nil
	if err != nil {
		return true, fmt.Errorf("frontend: book request %s on fallback worker %d: %w", p.ID, worker, err)
	}
	p.Worker, p.Decision = f.Worker, d
	return true, nil
}
