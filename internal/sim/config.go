package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/trace"
)

// Policy names a routing policy the simulator compares: one of the
// router's (router.ParsePolicy's names, the one vocabulary of serve, up
// and replay) or the simulator-only baseline cache-aware.
type Policy string

// The policies the simulator compares (DESIGN.md §8 baselines included).
const (
	// PolicyKV is the default router: router.PolicyKV, overlap from KV
	// events delivered after Config.EventDelay.
	PolicyKV Policy = "kv"
	// PolicyKVApprox is router.PolicyApprox: no events, overlap from the
	// routing history (TTL side index).
	PolicyKVApprox Policy = "approx"
	// PolicyLoad is router.PolicyLoad: the same cost function, cache
	// ignored.
	PolicyLoad Policy = "load"
	// PolicyRoundRobin is router.PolicyRoundRobin.
	PolicyRoundRobin Policy = "round-robin"
	// PolicyRandom is router.PolicyRandom (seeded source).
	PolicyRandom Policy = "random"
	// PolicyCacheAware is SGLang router's cache_aware policy (see
	// CacheAwareConfig), a simulator-only baseline.
	PolicyCacheAware Policy = "cache-aware"
	// PolicyKVFullOnly is PolicyKV crediting the full-attention group
	// alone (router IndexConfig.Groups.FullOnly), what a router that
	// knows nothing of KV cache groups does (DESIGN.md §13): a
	// simulator-only baseline for hybrid models. On a model without
	// groups it is kv, decision for decision (the same random stream), so
	// it is not in AllPolicies: WithHybridBaseline adds it for a hybrid
	// model.
	PolicyKVFullOnly Policy = "kv-full-only"
)

// ParsePolicy parses one policy name: the router's (router.ParsePolicy),
// "cache-aware" or "kv-full-only".
func ParsePolicy(s string) (Policy, error) {
	s = strings.TrimSpace(s)
	if Policy(s) == PolicyCacheAware || Policy(s) == PolicyKVFullOnly {
		return Policy(s), nil
	}
	p, err := router.ParsePolicy(s)
	if err != nil {
		return "", fmt.Errorf("sim: unknown policy %q (want %s)", s, policyList())
	}
	return Policy(p.String()), nil
}

// AllPolicies lists every policy in report order.
var AllPolicies = []Policy{PolicyKV, PolicyKVApprox, PolicyLoad, PolicyRoundRobin, PolicyRandom, PolicyCacheAware}

// ParsePolicies parses a comma-separated list of policy names; "all" or ""
// means AllPolicies. Duplicates are dropped, order is kept.
func ParsePolicies(s string) ([]Policy, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return slices.Clone(AllPolicies), nil
	}
	var out []Policy
	for _, f := range strings.Split(s, ",") {
		p, err := ParsePolicy(f)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// WithHybridBaseline returns ps with PolicyKVFullOnly after PolicyKV
// when ps has kv and not kv-full-only: the default list of a hybrid model,
// where the two differ (DESIGN.md §13).
func WithHybridBaseline(ps []Policy) []Policy {
	i := slices.Index(ps, PolicyKV)
	if i < 0 || slices.Contains(ps, PolicyKVFullOnly) {
		return ps
	}
	return slices.Insert(slices.Clone(ps), i+1, PolicyKVFullOnly)
}

func policyList() string {
	names := make([]string, 0, len(AllPolicies)+1)
	for _, p := range AllPolicies {
		names = append(names, string(p))
	}
	return strings.Join(append(names, string(PolicyKVFullOnly)), ", ")
}

// CacheAwareConfig configures the cache-aware baseline, modelled on the
// documented behaviour of SGLang router's cache_aware policy
// (sgl-router --policy cache_aware; defaults are its documented defaults):
//
//   - Per worker, an approximate prefix tree of the prompts routed to it
//     (routing history only, no feedback from the engines), LRU-evicted to
//     MaxTreeTokens every EvictionInterval.
//   - The fleet is imbalanced when max_load - min_load > BalanceAbsThreshold
//     AND max_load > BalanceRelThreshold * min_load, load being each
//     worker's in-flight requests. Imbalanced: route to the least-loaded
//     worker (shortest queue).
//   - Balanced: take the worker with the longest prefix match; if its
//     match rate (matched / prompt tokens) exceeds CacheThreshold route
//     there, otherwise to the worker with the smallest tree (most cache
//     room).
//
// In every case the prompt is then inserted into the chosen worker's tree.
// NB: SGLang's tree holds characters of the raw text; ours holds prompt
// blocks of Config.BlockSize tokens (the trace has no text), so matches are
// measured at block granularity and sizes in tokens.
type CacheAwareConfig struct {
	// CacheThreshold is the minimum match rate to follow the cache.
	// Default 0.5 (SGLang's default).
	CacheThreshold float64
	// BalanceAbsThreshold: imbalance needs max-min in-flight requests above
	// this. Default 32 (SGLang's default).
	BalanceAbsThreshold int
	// BalanceRelThreshold: imbalance needs max > this * min. Default 1.0001
	// (SGLang's default).
	BalanceRelThreshold float64
	// EvictionInterval is the period of the LRU eviction sweep (simulated
	// time). Default 60 s (SGLang's eviction_interval_secs).
	EvictionInterval time.Duration
	// MaxTreeTokens bounds each worker's tree, in tokens. Default 1<<24
	// (SGLang's max_tree_size, which counts characters there).
	MaxTreeTokens int
}

// DefaultCacheAwareConfig returns SGLang's documented defaults.
func DefaultCacheAwareConfig() CacheAwareConfig {
	return CacheAwareConfig{
		CacheThreshold:      0.5,
		BalanceAbsThreshold: 32,
		BalanceRelThreshold: 1.0001,
		EvictionInterval:    60 * time.Second,
		MaxTreeTokens:       1 << 24,
	}
}

// Validate reports every problem of c.
func (c CacheAwareConfig) Validate() error {
	var errs []error
	if !(c.CacheThreshold >= 0 && c.CacheThreshold <= 1) {
		errs = append(errs, fmt.Errorf("sim: cache-aware threshold %v must be in [0, 1]", c.CacheThreshold))
	}
	if c.BalanceAbsThreshold < 0 {
		errs = append(errs, fmt.Errorf("sim: cache-aware balance abs threshold %d must be >= 0", c.BalanceAbsThreshold))
	}
	if !(c.BalanceRelThreshold >= 0) || math.IsInf(c.BalanceRelThreshold, 0) {
		errs = append(errs, fmt.Errorf("sim: cache-aware balance rel threshold %v must be finite and >= 0", c.BalanceRelThreshold))
	}
	if c.EvictionInterval <= 0 {
		errs = append(errs, fmt.Errorf("sim: cache-aware eviction interval %v must be > 0", c.EvictionInterval))
	}
	if c.MaxTreeTokens <= 0 {
		errs = append(errs, fmt.Errorf("sim: cache-aware max tree tokens %d must be > 0", c.MaxTreeTokens))
	}
	return errors.Join(errs...)
}

// Defaults of the simulator (see the package doc for why).
const (
	DefaultWorkers    = 8
	DefaultBlockSize  = 64
	DefaultEventDelay = 10 * time.Millisecond
	DefaultSeed       = 1
)

// Config configures one simulation: one trace, one fleet, several policies.
type Config struct {
	// Trace is the request trace in arrival order (trace.ReadFile).
	// Required, non-empty.
	Trace []trace.Record
	// Limit keeps only the first Limit requests. Default 0 = all.
	Limit int
	// RateScale multiplies the arrival rate (divides every timestamp).
	// Default 1; must be > 0.
	RateScale float64
	// Workers is the fleet size W. Default 8.
	Workers int
	// BlockSize is the KV block size in tokens of every engine and of the
	// router. Default 64 (the mocker's and vLLM's); it divides the trace's
	// 512-token blocks, so trace reuse maps exactly onto router blocks.
	BlockSize int
	// Engine is every worker's mocker configuration (BlockSize and Worker
	// are overwritten). Default mocker.DefaultConfig() with SpeedupRatio 0
	// (simulated time advances by the unscaled model time).
	Engine mocker.Config
	// Tiers adds lower tiers under every engine's device pool (and a G4
	// store per fleet: each policy's simulation has its own). Default zero
	// value: G1 only.
	Tiers mocker.TierSizes
	// Router configures the router-backed policies (Mode and
	// BlockSize are overwritten per policy, PeerHints.Link with PeerLink
	// of Engine: hints are priced over the link the engines pull over).
	// Default router.DefaultConfig().
	Router router.Config
	// CacheAware configures the cache-aware baseline.
	CacheAware CacheAwareConfig
	// Policies to compare. Default AllPolicies.
	Policies []Policy
	// EventDelay is the simulated delay between the end of the forward pass
	// that emitted a KV event and its application to the kv policy's index.
	// Default 10 ms; 0 applies events at the end of their pass.
	EventDelay time.Duration
	// MetricsDelay is the delay of the KV usage each worker reports to the
	// router (busy thresholds) after every pass. Default 0: reported at the
	// end of the pass.
	MetricsDelay time.Duration
	// Seed seeds every random source (router tie-breaks, the random
	// policy). Default 1. The same Config always yields the same Report
	// (apart from wall-clock fields).
	Seed uint64
	// Parallel is how many policies run at once on their own goroutines.
	// Default 0 = runtime.GOMAXPROCS(0); 1 runs them one after another.
	Parallel int
	// ExactOutput, with Router.TrackOutputBlocks, routes each request with
	// its true output length from the trace (an oracle a live router
	// lacks). Default false: the running average of the output lengths of
	// the requests completed so far (router.OutputAverage, window
	// OutputWindow), the estimate serve uses without a client's hint.
	ExactOutput bool
	// KeepSamples keeps every request's TTFT in PolicyReport.TTFTSamples
	// (for CDF charts). Default false.
	KeepSamples bool
	// KeepRequests keeps every request's prediction and outcome in
	// PolicyReport.RequestRows (dump.go). Default false.
	KeepRequests bool
	// Disagg makes the fleet disaggregated, prefill and decode pools
	// (disagg.go, DESIGN.md §10). Default zero value: aggregated.
	Disagg DisaggConfig
	// LoRA runs requests under adapters loaded into engine slots
	// (lora.go). Default: no adapters (DefaultMaxLoRAs slots and
	// DefaultLoRALoadTime for when Adapters is set).
	LoRA LoRAConfig
}

// DefaultConfig returns the defaults (Trace still to be set).
func DefaultConfig() Config {
	eng := mocker.DefaultConfig()
	eng.SpeedupRatio = 0
	eng.BlockSize = DefaultBlockSize
	rc := router.DefaultConfig()
	rc.BlockSize = DefaultBlockSize
	return Config{
		RateScale:  1,
		Workers:    DefaultWorkers,
		BlockSize:  DefaultBlockSize,
		Engine:     eng,
		Router:     rc,
		CacheAware: DefaultCacheAwareConfig(),
		Policies:   slices.Clone(AllPolicies),
		EventDelay: DefaultEventDelay,
		Seed:       DefaultSeed,
		LoRA:       LoRAConfig{MaxLoRAs: DefaultMaxLoRAs, LoadTime: DefaultLoRALoadTime},
	}
}

// Validate reports every problem of c.
func (c Config) Validate() error {
	var errs []error
	if len(c.Trace) == 0 {
		errs = append(errs, errors.New("sim: empty trace"))
	}
	if c.Limit < 0 {
		errs = append(errs, fmt.Errorf("sim: limit %d must be >= 0", c.Limit))
	}
	if !(c.RateScale > 0) || math.IsInf(c.RateScale, 0) {
		errs = append(errs, fmt.Errorf("sim: rate scale %v must be finite and > 0", c.RateScale))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("sim: workers %d must be >= 1", c.Workers))
	}
	if c.BlockSize < 1 {
		errs = append(errs, fmt.Errorf("sim: block size %d must be >= 1", c.BlockSize))
	}
	eng := c.Engine
	eng.BlockSize = max(c.BlockSize, 1)
	if t := c.Tiers; t.Host.Blocks < 0 || t.Disk.Blocks < 0 || t.Shared.Blocks < 0 || t.Host.Mult < 0 || t.Disk.Mult < 0 || t.Shared.Mult < 0 {
		errs = append(errs, fmt.Errorf("sim: tiers %+v must be >= 0", t))
	}
	if err := eng.Validate(); err != nil {
		errs = append(errs, err)
	}
	rc := c.Router
	rc.BlockSize = max(c.BlockSize, 1)
	if err := rc.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.CacheAware.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(c.Policies) == 0 {
		errs = append(errs, errors.New("sim: no policies"))
	}
	for _, p := range c.Policies {
		if !slices.Contains(AllPolicies, p) && p != PolicyKVFullOnly {
			errs = append(errs, fmt.Errorf("sim: unknown policy %q (want %s)", p, policyList()))
		}
	}
	if c.EventDelay < 0 || c.MetricsDelay < 0 {
		errs = append(errs, fmt.Errorf("sim: event delay %v and metrics delay %v must be >= 0", c.EventDelay, c.MetricsDelay))
	}
	if err := c.Disagg.validate(&c); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateHybrid(); err != nil {
		errs = append(errs, err)
	}
	if err := c.LoRA.validate(&c); err != nil {
		errs = append(errs, err)
	}
	if c.Parallel < 0 {
		errs = append(errs, fmt.Errorf("sim: parallel %d must be >= 0", c.Parallel))
	}
	return errors.Join(errs...)
}
