package router

import (
	"fmt"
	"strings"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/selector"
)

// Policy is how the router picks a worker: the one routing vocabulary of
// kvrouter (serve, up, sim and replay parse it here).
type Policy uint8

const (
	// PolicyKV (default): lowest cost, with overlap from the event-fed
	// per-tier indexes (DESIGN.md §3, §4).
	PolicyKV Policy = iota
	// PolicyApprox: lowest cost, with overlap from the approximate side
	// index, which the router updates on every decision (no KV events).
	PolicyApprox
	// PolicyLoad: lowest cost with no overlap at all (load only).
	PolicyLoad
	// PolicyRoundRobin: the next eligible worker+rank after the last one
	// chosen, in worker order, blind to cost and cache.
	PolicyRoundRobin
	// PolicyRandom: an eligible worker+rank drawn uniformly from
	// Options.Rand, blind to cost and cache.
	PolicyRandom
)

var policyNames = [...]string{"kv", "approx", "load", "round-robin", "random"}

// PolicyNames lists the policy names in order ("kv", "approx", "load",
// "round-robin", "random").
func PolicyNames() []string { return policyNames[:] }

func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("policy(%d)", p)
}

// ParsePolicy parses a policy name (PolicyNames). The simulator's former
// spelling "kv-approx" is an error naming "approx": one name per policy.
func ParsePolicy(s string) (Policy, error) {
	s = strings.TrimSpace(s)
	if s == "kv-approx" {
		return 0, fmt.Errorf("router: policy %q is now %q", s, PolicyApprox)
	}
	for i, n := range policyNames {
		if n == s {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("router: unknown policy %q (want %s)", s, strings.Join(policyNames[:], ", "))
}

// MarshalText implements encoding.TextMarshaler (config files, flags).
func (p Policy) MarshalText() ([]byte, error) {
	if int(p) >= len(policyNames) {
		return nil, fmt.Errorf("router: unknown policy %d", p)
	}
	return []byte(p.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParsePolicy.
func (p *Policy) UnmarshalText(b []byte) error {
	v, err := ParsePolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// blind reports whether p picks without scoring (round-robin, random).
func (p Policy) blind() bool { return p == PolicyRoundRobin || p == PolicyRandom }

// pickBlindLocked is the round-robin and random pick: among the
// candidates that pass the filters (constraints and busy thresholds, as
// for every policy), the next after the last chosen (round-robin) or one
// drawn from r.rng (random). The breakdowns still carry each candidate's
// cost, for /route and logs, but the cost does not decide. With no
// eligible candidate it returns the selector's error and breakdowns.
// r.mu is held.
func (r *Router) pickBlindLocked(sreq *selector.Request, cands []selector.Candidate, bs []selector.Breakdown, rr *rrState) (int, []selector.Breakdown, error) {
	out := r.reasons
	clear(out)
	r.sel.Eligible(sreq, cands, out)
	n, floor := 0, 0
	for i := range cands {
		if out[i] == selector.ReasonNone {
			if n == 0 || cands[i].ActivePrefillTokens < floor {
				floor = cands[i].ActivePrefillTokens
			}
			n++
		}
	}
	if n == 0 {
		// The selector reports why, with its breakdowns; it draws from
		// the rng only when something is eligible.
		res, err := r.sel.SelectInto(sreq, cands, r.rng, bs, r.reasons)
		return -1, res.Breakdowns, err
	}
	bs = bs[:len(cands)]
	cfg := r.sel.Config()
	for i := range cands {
		if out[i] != selector.ReasonNone {
			bs[i] = selector.Breakdown{Worker: cands[i].Worker, Out: out[i], Overlap: cands[i].Overlap}
			continue
		}
		bs[i] = selector.Cost(cfg, sreq.ISL, sreq.BlockSize, floor, sreq.Utilization, &cands[i])
		bs[i].Worker, bs[i].Out, bs[i].Prob = cands[i].Worker, selector.ReasonNone, 1/float64(n)
	}
	chosen := -1
	switch r.cfg.Policy {
	case PolicyRoundRobin:
		first := -1
		for i := range cands {
			if out[i] != selector.ReasonNone {
				continue
			}
			if first < 0 {
				first = i
			}
			if rr.started && cands[i].Worker.Compare(rr.last) > 0 {
				chosen = i
				break
			}
		}
		if chosen < 0 {
			chosen = first // wrap around (or the first pick ever)
		}
		rr.last, rr.started = cands[chosen].Worker, true
		for i := range bs {
			if bs[i].Out == selector.ReasonNone {
				bs[i].Prob = 0
			}
		}
		bs[chosen].Prob = 1
	default: // PolicyRandom
		j := r.rng.IntN(n)
		for i := range cands {
			if out[i] != selector.ReasonNone {
				continue
			}
			if j == 0 {
				chosen = i
				break
			}
			j--
		}
	}
	return chosen, bs, nil
}

// rrState is round-robin's position: the worker+rank chosen last.
type rrState struct {
	last    kvevents.Worker
	started bool
}
