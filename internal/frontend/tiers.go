package frontend

import (
	"strconv"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// Storage tiers in the API (DESIGN.md §7). overlap_blocks stays the
// device/host/disk triple it always was; the tier_* fields name every
// tier, the fleet's shared G4 store ("external") included.

// HeaderTierOverlap carries the chosen worker's overlap per tier, e.g.
// "device=4,host_pinned=8,disk=8,external=0": with the router's cross-tier
// view, host_pinned and disk count the leading blocks held in that tier or
// a faster one.
const HeaderTierOverlap = "X-Kvrouter-Tier-Overlap"

// tierInts names a per-tier array by tier.
func tierInts(v *[kvevents.NumTiers]int) map[string]int {
	m := make(map[string]int, kvevents.NumTiers)
	for t, n := range v {
		m[kvevents.Tier(t).String()] = n
	}
	return m
}

// tierOverlapHeader formats ov for HeaderTierOverlap.
func tierOverlapHeader(ov *[kvevents.NumTiers]int) string {
	b := make([]byte, 0, 64) // on the stack: one allocation, the string
	for t, n := range ov {
		if t > 0 {
			b = append(b, ',')
		}
		b = append(append(b, kvevents.Tier(t).String()...), '=')
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(b)
}

// tierCandidate fills c's per-tier fields from breakdown b under the
// router's selector config.
func tierCandidate(c *Candidate, b *selector.Breakdown, cfg *router.Config) {
	c.TierOverlap = tierInts(&b.Overlap)
	if b.Out != selector.ReasonNone {
		return
	}
	cr := selector.TierCredits(&cfg.Selector, b)
	c.TierCredit = make(map[string]float64, kvevents.NumTiers)
	for t, v := range cr {
		c.TierCredit[kvevents.Tier(t).String()] = v
	}
	c.OnboardMS = b.Onboard
}
