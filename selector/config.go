package selector

import (
	"errors"
	"fmt"
	"math"
)

// Config holds every knob of the cost function and the busy thresholds.
// Field docs state the default (DefaultConfig) and what zero means.
type Config struct {
	// Cost selects the cost function: CostTime (default, the zero value)
	// estimates time to first token in ms from Timing; CostBlocks is
	// Dynamo's formula in blocks (Preset "dynamo"). Every knob below
	// applies to both (see the package doc for where).
	Cost CostModel `yaml:"cost"`
	// Timing is the timing model of CostTime, used for every candidate
	// that carries no fitted model of its own (Candidate.Timing). Default
	// (and zero value) DefaultTiming(): the mocker's DESIGN.md §6
	// polynomials.
	Timing Timing `yaml:"timing"`

	// OverlapCredit multiplies device-tier (G1) overlap blocks in the
	// credit. Default 1.0; 0 ignores the cache (pure load balancing).
	// Values above 1 chase cache hits onto busier workers.
	OverlapCredit float64 `yaml:"overlap_credit"`
	// PrefillLoadScale multiplies the adjusted prefill term. Default 1.0;
	// 0 ignores prefill load (decode footprint only).
	PrefillLoadScale float64 `yaml:"prefill_load_scale"`
	// HostWeight is the credit per host-pinned (G2) overlap block beyond the
	// device prefix. Default 0.75; 0 ignores the host tier.
	HostWeight float64 `yaml:"host_weight"`
	// DiskWeight is the credit per disk (G3) overlap block beyond the device
	// and host prefixes. Default 0.25; 0 ignores the disk tier.
	DiskWeight float64 `yaml:"disk_weight"`
	// SharedWeight is the credit per block of the fleet's shared G4 store
	// beyond the worker's own tiers (every worker can onboard it). Default
	// 0: G4 counts only after onboarding (DESIGN.md §7). A weight w says
	// onboarding a block costs (1-w) of recomputing it: with the mocker's
	// defaults (8 MiB blocks over 12.5 GB/s, 1ms per batch) a 64-block
	// prefix loads in ~44ms against ~86ms of prefill for its 4096 tokens on
	// an idle worker (DESIGN.md §6), so onboarding saves about half of the
	// recomputation: w ≈ 0.5.
	SharedWeight float64 `yaml:"shared_weight"`
	// Onboard is the transfer model of the lower tiers' loads (CostTime
	// only; onboard.go): a lower-tier hit waits for its blocks to reach
	// G1. Default zero = off (a hit is priced by its credit alone);
	// DefaultOnboard is the mocker's default links.
	Onboard Onboard `yaml:"onboard"`

	// CreditDecay shrinks the device credit of a cache-rich worker with a
	// prefill backlog: the device credit is multiplied by
	//
	//	1 / (1 + CreditDecay * excess_prefill_blocks / request_blocks)
	//
	// where request_blocks = max(1, isl/B) and excess_prefill_blocks =
	// (active_prefill_tokens - floor_tokens) / B, floor_tokens being the
	// least active prefill tokens among the eligible candidates of this
	// request (the "load floor"; see DecayAbsolute). With CreditDecay 1 the
	// credit halves at one request-equivalent of excess backlog; workers at
	// the floor keep their full credit. Matches Dynamo's
	// router-kv-overlap-score-credit-decay. Default 0 = no decay.
	CreditDecay float64 `yaml:"credit_decay"`
	// DecayAbsolute is the decay's floor switch: when true the excess is
	// measured from zero (all of a worker's active prefill counts as
	// excess), instead of from the load floor. Default false (Dynamo's
	// meaning: decay relative to the least-loaded eligible worker).
	DecayAbsolute bool `yaml:"decay_absolute"`
	// Unclamped is the prefill floor switch: when false (default) the
	// adjusted prefill is max(0, raw - credit), as in Dynamo, so credit
	// never pays more than the prefill it saves; when true the clamp is
	// removed and the adjusted prefill may go negative, so with
	// OverlapCredit > 1 deeper cache hits keep lowering the cost even past
	// the worker's backlog.
	Unclamped bool `yaml:"unclamped"`

	// ImposedWeight (CostTime only) charges the request's own prefill
	// time again, times ImposedWeight/(1-U) at fleet utilization U
	// (Request.Utilization): what that work costs the fleet, i.e. the
	// requests that will queue behind it on the worker and the capacity
	// and cache room it takes from them. It makes a cache hit worth more
	// than the time it saves this request alone, more so as the fleet
	// fills, and makes a burst of requests with the same new prefix follow
	// the first one (with the predicted side index). Default
	// DefaultImposedWeight; 0 = this request's time to first token only.
	ImposedWeight float64 `yaml:"imposed_weight"`
	// PassModel (CostTime only) prices the queue as the engine schedules
	// it (pass.go): the request waits out the pass in flight, which it
	// cannot join, then shares passes of max_batched_tokens with the
	// prefill pending behind it, first come first served. Candidates
	// without a pass model (Candidate.PassKnown false) or at their
	// sequence cap (Candidate.MaxNumSeqs) keep the pass-agnostic queue;
	// the latter after the wait for a sequence slot (Candidate.SlotWait).
	// Default true; false = the whole queue ahead in passes of its own,
	// then the request's (the pass in flight charged in full).
	PassModel bool `yaml:"pass_model"`
	// TransferWeight, when > 0, says the request's prompt KV arrives by
	// transfer from another worker instead of being computed (the decode
	// hop of a disaggregated request, DESIGN.md §10): the candidate's own
	// prefill is its uncached prompt tokens times TransferWeight, the cost
	// of receiving a block relative to computing it. The router sets it
	// per request (Overrides.TransferWeight, Router Config.Disagg).
	// Default 0: the prompt is computed.
	TransferWeight float64 `yaml:"transfer_weight"`
	// LoRALoad is the time, in ms, a request naming an adapter waits for
	// the adapter to load on a worker that does not have it loaded; the
	// cost charges it there (lora.go). Default DefaultLoRALoad (an 84 MB
	// adapter read at 6 GB/s); 0 with LoRAEvict 0 = adapters cost nothing
	// (requests naming one are placed as base-model requests).
	LoRALoad float64 `yaml:"lora_load_ms"`
	// LoRAEvict is the further charge, in ms, on a worker whose adapter
	// slots are all taken: the load unloads the least recently used
	// adapter, whose next request there loads it again. Default
	// DefaultLoRALoad (one reload).
	LoRAEvict float64 `yaml:"lora_evict_ms"`
	// ActiveRequestWeight charges this many blocks per active request on a
	// worker. Default 0 (off).
	ActiveRequestWeight float64 `yaml:"active_request_weight"`
	// Temperature of the softmax over min-max-normalized costs. Default 0:
	// the lowest cost wins, ties broken as TieUtilization says.
	Temperature float64 `yaml:"temperature"`
	// TieUtilization, at temperature 0, gives a cost tie to the candidate
	// with the lowest rank utilization (Candidate.Utilization: the one
	// that has been idle longest), and only then picks at random. Two
	// routers with the same information then decide alike whatever their
	// random streams, and an idle fleet's work spreads over the ranks
	// that have had least. Default true; false = ties at random
	// (Dynamo's behaviour, preset "dynamo").
	TieUtilization bool `yaml:"tie_utilization"`

	// BusyKVUsage: a rank is over its busy threshold when its KV usage
	// fraction exceeds this. Default 0 = off. Range (0, 1].
	BusyKVUsage float64 `yaml:"busy_kv_usage"`
	// BusyPrefillTokens: a rank is over when its active prefill tokens
	// exceed this. Default 0 = off.
	BusyPrefillTokens int `yaml:"busy_prefill_tokens"`
	// BusyPrefillFraction: a rank is over when its active prefill tokens
	// exceed this fraction of its max_num_batched_tokens (ranks with an
	// unknown max are never over by this rule). Default 0 = off.
	BusyPrefillFraction float64 `yaml:"busy_prefill_fraction"`
}

// DefaultImposedWeight is the default Config.ImposedWeight: the M/M/1
// price of the request's work (package doc) taken once, as its own wait
// is. Measured (internal/sim, every shipped trace at 50/70/90% load; see
// its package doc): with the pass model, 1 beats 1.5, 2 and 3.
const DefaultImposedWeight = 1.0

// DefaultConfig returns kvrouter's defaults: the time cost (CostTime) on
// the DESIGN.md §6 timing model, with DESIGN.md §4's knob values.
func DefaultConfig() Config {
	return Config{
		Cost:             CostTime,
		Timing:           DefaultTiming(),
		ImposedWeight:    DefaultImposedWeight,
		PassModel:        true,
		TieUtilization:   true,
		OverlapCredit:    1.0,
		PrefillLoadScale: 1.0,
		HostWeight:       0.75,
		DiskWeight:       0.25,
		LoRALoad:         DefaultLoRALoad,
		LoRAEvict:        DefaultLoRALoad,
	}
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if c.Cost > CostBlocks {
		errs = append(errs, fmt.Errorf("selector: unknown cost model %d", c.Cost))
	}
	if err := c.Timing.Validate(); err != nil {
		errs = append(errs, err)
	}
	nonneg := func(name string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			errs = append(errs, fmt.Errorf("selector: %s = %v must be finite and >= 0", name, v))
		}
	}
	nonneg("OverlapCredit", c.OverlapCredit)
	nonneg("PrefillLoadScale", c.PrefillLoadScale)
	nonneg("HostWeight", c.HostWeight)
	nonneg("DiskWeight", c.DiskWeight)
	nonneg("SharedWeight", c.SharedWeight)
	nonneg("CreditDecay", c.CreditDecay)
	if err := c.Onboard.Validate(); err != nil {
		errs = append(errs, err)
	}
	nonneg("ActiveRequestWeight", c.ActiveRequestWeight)
	nonneg("LoRALoad", c.LoRALoad)
	nonneg("LoRAEvict", c.LoRAEvict)
	nonneg("ImposedWeight", c.ImposedWeight)
	nonneg("TransferWeight", c.TransferWeight)
	nonneg("Temperature", c.Temperature)
	nonneg("BusyKVUsage", c.BusyKVUsage)
	nonneg("BusyPrefillFraction", c.BusyPrefillFraction)
	if c.BusyKVUsage > 1 {
		errs = append(errs, fmt.Errorf("selector: BusyKVUsage = %v must be <= 1", c.BusyKVUsage))
	}
	if c.BusyPrefillTokens < 0 {
		errs = append(errs, fmt.Errorf("selector: BusyPrefillTokens = %d must be >= 0", c.BusyPrefillTokens))
	}
	return errors.Join(errs...)
}

// Overrides are per-request replacements of Config knobs; nil keeps the
// configured value.
type Overrides struct {
	OverlapCredit    *float64
	PrefillLoadScale *float64
	Temperature      *float64
	TransferWeight   *float64 // Config.TransferWeight (disaggregated decode hop)
}

// Validate reports every problem with o.
func (o Overrides) Validate() error {
	if o.OverlapCredit == nil && o.PrefillLoadScale == nil && o.Temperature == nil && o.TransferWeight == nil {
		return nil
	}
	var errs []error
	check := func(name string, p *float64) {
		if p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0) || *p < 0) {
			errs = append(errs, fmt.Errorf("selector: override %s = %v must be finite and >= 0", name, *p))
		}
	}
	check("OverlapCredit", o.OverlapCredit)
	check("PrefillLoadScale", o.PrefillLoadScale)
	check("Temperature", o.Temperature)
	check("TransferWeight", o.TransferWeight)
	return errors.Join(errs...)
}

// Float returns a pointer to v, for Overrides literals.
func Float(v float64) *float64 { return &v }

// effective returns c with o applied.
func (c Config) effective(o Overrides) Config {
	if o.OverlapCredit != nil {
		c.OverlapCredit = *o.OverlapCredit
	}
	if o.PrefillLoadScale != nil {
		c.PrefillLoadScale = *o.PrefillLoadScale
	}
	if o.Temperature != nil {
		c.Temperature = *o.Temperature
	}
	if o.TransferWeight != nil {
		c.TransferWeight = *o.TransferWeight
	}
	return c
}
