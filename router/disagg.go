package router

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Disaggregated prefill and decode (DESIGN.md §10). Workers carry a Role;
// a request is placed by hops: HopAggregated (the whole request on one
// worker), or HopPrefill then HopDecode. Each hop is an ordinary Route
// over the workers whose role serves it, with the same indexes and the
// same per-worker load: the prefill hop is KV-aware over the prefill pool;
// the decode hop is load-aware over the decode pool and credits only the
// blocks the decode worker already holds (Overrides.TransferWeight prices
// the rest as a transfer, not a computation). Disaggregate decides, per
// request, whether to take the two hops at all (DisaggPolicy).

// Role is what a worker does in a disaggregated fleet.
type Role uint8

const (
	// RoleBoth (default, the zero value) serves every hop: an aggregated
	// worker.
	RoleBoth Role = iota
	// RolePrefill serves prefill hops only (vLLM kv_producer).
	RolePrefill
	// RoleDecode serves decode hops and aggregated requests (vLLM
	// kv_consumer; conditional disaggregation runs short prompts on it).
	RoleDecode
)

var roleNames = [...]string{"both", "prefill", "decode"}

func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", r)
}

// ParseRole parses "both" (or ""), "prefill" or "decode".
func ParseRole(s string) (Role, error) {
	i, err := parseName("role", s, roleNames[:])
	return Role(i), err
}

// parseName returns the index of s in names; "" is index 0, the zero value.
func parseName(kind, s string, names []string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	for i, n := range names {
		if n == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("router: unknown %s %q (want %s, %s or %s)", kind, s, names[0], names[1], names[2])
}

// MarshalText implements encoding.TextMarshaler.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseRole.
func (r *Role) UnmarshalText(b []byte) error {
	v, err := ParseRole(string(b))
	*r = v
	return err
}

// Hop is the part of a request a decision places.
type Hop uint8

const (
	// HopAggregated (the zero value): the whole request on one worker of
	// role both or decode.
	HopAggregated Hop = iota
	// HopPrefill: the prompt with max_tokens 1 on a worker of role prefill
	// or both; its KV is then transferred to the decode hop's worker.
	HopPrefill
	// HopDecode: the request on a worker of role decode or both, which
	// receives the prompt's KV from the prefill hop's worker.
	HopDecode
)

var hopNames = [...]string{"aggregated", "prefill", "decode"}

func (h Hop) String() string {
	if int(h) < len(hopNames) {
		return hopNames[h]
	}
	return fmt.Sprintf("hop(%d)", h)
}

// ParseHop parses "aggregated" (or ""), "prefill" or "decode".
func ParseHop(s string) (Hop, error) {
	i, err := parseName("hop", s, hopNames[:])
	return Hop(i), err
}

// Serves reports whether a worker of role r may take hop h.
func (r Role) Serves(h Hop) bool {
	switch r {
	case RolePrefill:
		return h == HopPrefill
	case RoleDecode:
		return h != HopPrefill
	}
	return true
}

// DisaggPolicy says when a request takes the two hops (conditional
// disaggregation, DESIGN.md §10). Whatever the policy, a fleet without a
// worker of role prefill runs every request aggregated.
type DisaggPolicy uint8

const (
	// DisaggAlways: every request takes the prefill hop.
	DisaggAlways DisaggPolicy = iota
	// DisaggISL: aggregated when the prompt tokens the best decode worker
	// does not hold are below DisaggConfig.ISLThreshold.
	DisaggISL
	// DisaggPrefillLoad: aggregated when the prefill pool's backlog is
	// above DisaggConfig.LoadThreshold.
	DisaggPrefillLoad
	// DisaggISLOrLoad: aggregated when either DisaggISL or
	// DisaggPrefillLoad says so.
	DisaggISLOrLoad
)

var disaggNames = [...]string{"always", "isl", "prefill-load", "isl-or-load"}

// DisaggPolicyNames lists the policy names in order.
func DisaggPolicyNames() []string { return disaggNames[:] }

func (p DisaggPolicy) String() string {
	if int(p) < len(disaggNames) {
		return disaggNames[p]
	}
	return fmt.Sprintf("disagg(%d)", p)
}

// ParseDisaggPolicy parses always, isl, prefill-load or isl-or-load.
func ParseDisaggPolicy(s string) (DisaggPolicy, error) {
	s = strings.TrimSpace(s)
	for i, n := range disaggNames {
		if n == s {
			return DisaggPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("router: unknown disaggregation policy %q (want %s)", s, strings.Join(disaggNames[:], ", "))
}

// MarshalText implements encoding.TextMarshaler.
func (p DisaggPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseDisaggPolicy.
func (p *DisaggPolicy) UnmarshalText(b []byte) error {
	v, err := ParseDisaggPolicy(string(b))
	*p = v
	return err
}

// DisaggConfig configures disaggregated routing (DESIGN.md §10). It only
// matters when some worker has RolePrefill.
type DisaggConfig struct {
	// Policy decides per request whether to disaggregate. Default
	// DefaultDisaggPolicy (chosen by measurement, internal/sim).
	Policy DisaggPolicy `yaml:"policy"`
	// ISLThreshold (isl, isl-or-load) is the uncached prompt length in
	// tokens below which a request runs aggregated on a decode worker.
	// Default 8192 (measured with DefaultDisaggPolicy); 0 never aggregates
	// by length.
	ISLThreshold int `yaml:"isl_threshold"`
	// LoadThreshold (prefill-load, isl-or-load) is the prefill pool's
	// backlog, in engine steps (active prefill tokens over the pool
	// divided by its max_num_batched_tokens), above which a request runs
	// aggregated. Default 2; 0 never aggregates by load.
	LoadThreshold float64 `yaml:"load_threshold"`
	// TransferWeight prices, on the decode hop, each prompt block the
	// decode worker does not hold as this fraction of computing it: it is
	// received over the KV transfer instead (selector.TransferWeight).
	// Default 0.35: a 64-token block of a Llama-3-8B-like model (8 MiB)
	// moves in ~0.34 ms at the mocker's 25 GB/s default, against ~1 ms to
	// compute it (DESIGN.md §6 prefill slope). 0 = only the decode
	// worker's load decides (any positive value credits its own blocks).
	TransferWeight float64 `yaml:"transfer_weight"`
}

// DefaultDisaggPolicy is the default DisaggConfig.Policy, chosen by
// measurement (internal/sim, conversation trace, 8 workers as 4:4, loads
// 50/70/90% of the aggregated fleet's capacity): isl with an 8192-token
// threshold had the best TTFT p50 of every disaggregated variant (180 /
// 195 / 211 ms, against always 516 / 1140 / 7509 ms and the aggregated kv
// fleet's 186 / 203 / 296 ms): a follow-up turn whose history the decode
// worker already holds runs there without a transfer, and only long new
// prompts pay the prefill pool and the KV pull. prefill-load and
// isl-or-load (threshold 2 steps) shed long prompts onto the decode pool
// and overload it on an even split; they helped a prefill-starved 2:6
// fleet (docs/experiments/sim-disagg.md).
const DefaultDisaggPolicy = DisaggISL

// DefaultDisaggConfig returns the defaults.
func DefaultDisaggConfig() DisaggConfig {
	return DisaggConfig{Policy: DefaultDisaggPolicy, ISLThreshold: 8192, LoadThreshold: 2, TransferWeight: 0.35}
}

// Validate reports every problem with c.
func (c DisaggConfig) Validate() error {
	var errs []error
	if c.Policy > DisaggISLOrLoad {
		errs = append(errs, fmt.Errorf("router: unknown disaggregation policy %d", c.Policy))
	}
	if c.ISLThreshold < 0 {
		errs = append(errs, fmt.Errorf("router: disagg isl threshold %d must be >= 0", c.ISLThreshold))
	}
	for name, v := range map[string]float64{"load threshold": c.LoadThreshold, "transfer weight": c.TransferWeight} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			errs = append(errs, fmt.Errorf("router: disagg %s %v must be finite and >= 0", name, v))
		}
	}
	return errors.Join(errs...)
}

// Plan is Disaggregate's answer.
type Plan struct {
	// Disaggregate: take the prefill hop, then the decode hop; false: one
	// HopAggregated decision.
	Disaggregate bool
	// Reason names what decided: "no-prefill-pool", "always", "short"
	// (isl), "prefill-busy" (load), or "long" / "prefill-idle" when the
	// conditional policy chose to disaggregate.
	Reason string
	// Uncached is the prompt tokens the best decode-capable worker does
	// not hold; Backlog the prefill pool's backlog in engine steps.
	Uncached int
	Backlog  float64
}

// defaultBatchedTokens stands for a worker's unknown max_num_batched_tokens
// in the backlog (the mocker's and vLLM's common default, DESIGN.md §6).
const defaultBatchedTokens = 8192

// HasPrefillPool reports whether any worker has RolePrefill.
func (r *Router) HasPrefillPool() bool {
	r.mu.Lock() // no load or prediction read: needs no settle
	defer r.mu.Unlock()
	return r.hasPrefillLocked()
}

func (r *Router) hasPrefillLocked() bool { return r.prefills > 0 }

// Disaggregate decides at now whether req takes the two hops, under
// Config.Disagg.Policy. It books nothing: the caller then routes the hops
// (Route with Request.Hop set).
func (r *Router) Disaggregate(req *Request, now time.Time) (Plan, error) {
	c := r.cfg.Disagg
	p, err := r.prepare(req)
	if err != nil {
		return Plan{}, err
	}
	defer putPending(p)
	if r.cfg.Policy == PolicyKV && c.Policy != DisaggAlways && c.Policy != DisaggPrefillLoad {
		r.lookupKV(p)
	}
	r.lock()
	defer r.mu.Unlock()
	if !r.hasPrefillLocked() {
		return Plan{Reason: "no-prefill-pool"}, nil
	}
	if c.Policy == DisaggAlways {
		return Plan{Disaggregate: true, Reason: "always"}, nil
	}
	// The deepest prefix a decode-capable worker holds (its own cache:
	// the aggregated alternative would start from it).
	best := 0
	for _, o := range p.ov[kvevents.TierDevice] {
		ws := r.workers[o.Worker.ID]
		if ws != nil && int(o.Worker.Rank) < ws.info.DPSize && ws.info.Role.Serves(HopAggregated) {
			best = max(best, o.Blocks)
		}
	}
	var tokens, batched int
	for i := range r.rankRefs {
		if rf := &r.rankRefs[i]; rf.ws.info.Role == RolePrefill {
			ws := rf.ws
			tokens += r.loads.LoadAt(int(rf.slot)).PrefillTokens
			batched += cmpOr(ws.info.MaxNumBatchedTokens, defaultBatchedTokens)
		}
	}
	pl := Plan{Uncached: max(0, p.isl-best*r.cfg.BlockSize), Backlog: float64(tokens) / float64(max(1, batched))}
	short := c.ISLThreshold > 0 && pl.Uncached < c.ISLThreshold
	busy := c.LoadThreshold > 0 && pl.Backlog > c.LoadThreshold
	switch {
	case (c.Policy == DisaggISL || c.Policy == DisaggISLOrLoad) && short:
		pl.Reason = "short"
	case (c.Policy == DisaggPrefillLoad || c.Policy == DisaggISLOrLoad) && busy:
		pl.Reason = "prefill-busy"
	case c.Policy == DisaggPrefillLoad:
		pl.Disaggregate, pl.Reason = true, "prefill-idle"
	default:
		pl.Disaggregate, pl.Reason = true, "long"
	}
	return pl, nil
}

func cmpOr(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}
