package router

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kvrouter/kvrouter/loads"
	"github.com/kvrouter/kvrouter/queue"
	"github.com/kvrouter/kvrouter/selector"
)

// DefaultBlockSize is the default block size in tokens (the mocker's and
// vLLM's common setting for kvrouter fleets).
const DefaultBlockSize = 64

// DefaultMaxTenants is QueueConfig.MaxTenants's default.
const DefaultMaxTenants = 64

// QueueConfig configures the wait queue (DESIGN.md §4).
type QueueConfig struct {
	// Threshold enables the queue: a request waits while every eligible
	// worker+rank has active_prefill_tokens > Threshold *
	// max_num_batched_tokens. Default 0 = off (no queue).
	Threshold float64 `yaml:"threshold"`
	// Policy orders waiting requests. Default FCFS.
	Policy queue.Policy `yaml:"policy"`
	// Capacity bounds the queue; a request that would overflow it fails
	// with an error matching selector.ErrAllOverloaded (529) and
	// queue.ErrFull. Default 1024; 0 = unbounded.
	Capacity int `yaml:"capacity"`
	// Fair releases waiting requests by weighted deficit round robin
	// across tenants (Request.Tenant), Policy ordering each tenant's own
	// requests, so a tenant flooding the queue cannot starve the others.
	// Default false: one queue, tenants ignored.
	Fair bool `yaml:"fair"`
	// TenantWeights are the tenants' DRR weights (> 0; a tenant not
	// listed weighs 1): a tenant of weight w is released w requests per
	// round while it has any waiting.
	TenantWeights map[string]float64 `yaml:"tenant_weights"`
	// MaxTenants bounds the tenants with a sub-queue of their own at
	// once; requests of further tenants share one bucket (queue.OtherTenant,
	// weight 1). Default 64; 0 = unbounded.
	MaxTenants int `yaml:"max_tenants"`
}

// AffinityConfig configures session affinity (DESIGN.md §4).
type AffinityConfig struct {
	// Enabled turns session affinity on. Default false.
	Enabled bool `yaml:"enabled"`
	// TTL is the idle time after which a binding expires. Default 5 min;
	// 0 = bindings never expire (they still go when the worker leaves).
	TTL time.Duration `yaml:"ttl"`
	// MaxSessions bounds the bindings held, this router's and those other
	// replicas shared; a new one beyond evicts the least recently bound
	// (package affinity). Default DefaultMaxSessions; 0 = no bound.
	MaxSessions int `yaml:"max_sessions"`
	// MaxBytes bounds the bytes the bindings hold (session id plus
	// affinity.EntryOverhead each), evicting likewise. Default
	// DefaultAffinityMaxBytes; 0 = no bound.
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxIDBytes is the longest session id accepted: Route refuses a
	// longer one (ErrBadRequest, a 400 in the frontend), ApplyRemote a
	// bind of one. Default DefaultMaxSessionIDBytes; 0 = no bound.
	MaxIDBytes int `yaml:"max_id_bytes"`
}

// Affinity bounds' defaults: 100000 bindings of 36-byte ids (UUIDs) take
// about 15 MB; 32 MiB caps ids near the 1 KiB limit at about 28000.
const (
	DefaultMaxSessions       = 100000
	DefaultAffinityMaxBytes  = 32 << 20
	DefaultMaxSessionIDBytes = 1024
)

// PredictConfig configures the predicted side index (PolicyKV): every
// decision also records the request's blocks for the chosen worker in a
// short-TTL approximate index, and a lookup takes, per worker, the larger
// of the event-fed and the predicted device overlap. A burst of requests
// sharing a new prefix then follows the first one instead of scattering
// while that prefix's KV events are still in flight. The prediction is
// kept apart from the event-fed index (DESIGN.md §3): it never writes to it.
// With Active on, a local booking is recorded when it ends, with the
// expiry it had when routed (predictend.go): decisions are the same.
type PredictConfig struct {
	// TTL is how long a prediction lasts: long enough to cover the first
	// request's prefill and its events' delay, short enough that an
	// eviction the events report is not overridden for long. Default
	// DefaultPredictTTL; 0 = off (Dynamo's behaviour, preset "dynamo").
	TTL time.Duration `yaml:"ttl"`
	// Active also credits, per worker, the longest prefix of the request
	// held by that worker's active requests (routed and not yet freed,
	// remote bookings included; the load tracker knows them). An engine
	// does not evict a running request's blocks, so they are resident
	// however late their events are: a prediction lasts until the
	// request ends, when its events have long confirmed it, and the
	// event-fed overlap is then never below what the routing history
	// (PolicyApprox) knows of running requests. Default true; false =
	// off (Dynamo's behaviour, preset "dynamo").
	Active bool `yaml:"active"`
}

// Config composes the router's component configurations.
type Config struct {
	// Policy is how a worker is picked (ParsePolicy). Default PolicyKV
	// (the zero value).
	Policy Policy `yaml:"policy"`
	// BlockSize is B in tokens, which must equal every worker's block size.
	// Default 64; must be > 0.
	BlockSize int `yaml:"block_size"`
	// Index configures the default indexes, one config per index kind
	// (Flash stride; Approx TTL, size bound; ...). Default
	// DefaultIndexConfig; zero fields mean the indexer defaults.
	Index IndexConfig `yaml:"index"`
	// Selector holds the cost knobs, temperature and busy thresholds.
	Selector selector.Config `yaml:"selector"`
	// Loads holds the stale limit of the load tracker.
	Loads loads.Config `yaml:"loads"`
	// Queue configures the wait queue (off by default).
	Queue QueueConfig `yaml:"queue"`
	// Affinity configures session affinity (off by default).
	Affinity AffinityConfig `yaml:"affinity"`
	// UtilizationWindow is the time constant of the running estimate of
	// the fleet's prefill utilization (selector.Request.Utilization), which
	// the default time cost uses to price the delay a request imposes on
	// later ones, and of each rank's (the selector's cost tie-break,
	// Candidate.Utilization). Default 10 s; 0 = no estimate (that term
	// and the tie-break off: ties at random).
	UtilizationWindow time.Duration `yaml:"utilization_window"`
	// Predict configures the predicted side index (PolicyKV only).
	// Default TTL DefaultPredictTTL and Active true; zero = both off.
	Predict PredictConfig `yaml:"predict"`
	// TrackOutputBlocks, when true, charges a request's expected output
	// (Request.OutputTokens / BlockSize, rounded up) as decode blocks on
	// its worker. Default false.
	TrackOutputBlocks bool `yaml:"track_output_blocks"`
	// TierChains reads a worker's KV as one prefix chain across tiers
	// (tierview.go): lower-tier stores under a faster-tier parent are
	// accepted, and the host, disk and external indexes hold the blocks
	// reachable in that tier or faster. Default false: each tier's index
	// takes its events as they come (a store under a parent of another
	// tier is rejected). Snapshots (DESIGN.md §9) carry the view through
	// DumpTiers. serve turns it on by default, the simulator with lower
	// tiers; until a worker sends a lower-tier event it costs a map lookup
	// per event.
	TierChains bool `yaml:"tier_chains"`
	// Disagg configures disaggregated prefill and decode (disagg.go,
	// DESIGN.md §10); it only matters with workers of RolePrefill.
	// Default DefaultDisaggConfig().
	Disagg DisaggConfig `yaml:"disagg"`
	// PeerHints prices the peer-KV hints of FeaturePeerKVHints
	// (peerhint.go); it only matters with that feature on. Default
	// DefaultPeerHintConfig().
	PeerHints PeerHintConfig `yaml:"peer_hints"`
	// EnableFeature names the live hypotheses about the cost to switch on
	// (features.go; FeatureNames lists them; items may hold several names
	// separated by commas). Unknown names are refused. Default none: the
	// default cost model.
	EnableFeature []string `yaml:"enable_feature"`
}

// DefaultConfig returns the defaults of DESIGN.md §4.
func DefaultConfig() Config {
	return Config{
		Policy:    PolicyKV,
		BlockSize: DefaultBlockSize,
		Index:     DefaultIndexConfig(),
		Selector:  selector.DefaultConfig(),
		Loads:     loads.DefaultConfig(),
		Queue:     QueueConfig{Policy: queue.FCFS, Capacity: 1024, MaxTenants: DefaultMaxTenants},
		Affinity: AffinityConfig{TTL: 5 * time.Minute, MaxSessions: DefaultMaxSessions, MaxBytes: DefaultAffinityMaxBytes,
			MaxIDBytes: DefaultMaxSessionIDBytes},
		Predict: PredictConfig{TTL: DefaultPredictTTL, Active: true},

		UtilizationWindow: 10 * time.Second,
		Disagg:            DefaultDisaggConfig(),
		PeerHints:         DefaultPeerHintConfig(),
	}
}

// DefaultPredictTTL is the default lifetime of a prediction
// (Config.Predict), chosen by measurement (internal/sim): it covers a
// prefill and the events' delay; longer changed nothing measurable.
const DefaultPredictTTL = 500 * time.Millisecond

// Preset returns DefaultConfig with the selector preset name
// (selector.Preset): "default", or "dynamo" for Dynamo's exact cost and
// defaults, with the predicted side index off as in Dynamo.
func Preset(name string) (Config, error) {
	sc, err := selector.Preset(name)
	if err != nil {
		return Config{}, fmt.Errorf("router: %w", err)
	}
	c := DefaultConfig()
	c.Selector = sc
	if name == selector.PresetDynamo {
		c.Predict = PredictConfig{}
	}
	return c, nil
}

// Validate reports every problem with c, joined.
func (c Config) Validate() error {
	var errs []error
	if c.Policy > PolicyRandom {
		errs = append(errs, fmt.Errorf("router: unknown policy %d", c.Policy))
	}
	if c.BlockSize <= 0 {
		errs = append(errs, fmt.Errorf("router: block size %d must be > 0", c.BlockSize))
	}
	if err := c.Index.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Selector.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Loads.Validate(); err != nil {
		errs = append(errs, err)
	}
	if t := c.Queue.Threshold; math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
		errs = append(errs, fmt.Errorf("router: queue threshold %v must be finite and >= 0", t))
	}
	if c.Queue.Policy > queue.WSPT {
		errs = append(errs, fmt.Errorf("router: unknown queue policy %d", c.Queue.Policy))
	}
	if c.Queue.Capacity < 0 {
		errs = append(errs, fmt.Errorf("router: queue capacity %d must be >= 0", c.Queue.Capacity))
	}
	if c.Queue.MaxTenants < 0 {
		errs = append(errs, fmt.Errorf("router: queue max tenants %d must be >= 0", c.Queue.MaxTenants))
	}
	if _, err := queue.NewFair[int](c.Queue.Policy, 0, 0, c.Queue.TenantWeights); err != nil {
		errs = append(errs, fmt.Errorf("router: %w", err))
	}
	if c.UtilizationWindow < 0 {
		errs = append(errs, fmt.Errorf("router: utilization window %v must be >= 0", c.UtilizationWindow))
	}
	if c.Predict.TTL < 0 {
		errs = append(errs, fmt.Errorf("router: predict TTL %v must be >= 0", c.Predict.TTL))
	}
	if _, err := EnabledFeatures(c.EnableFeature); err != nil {
		errs = append(errs, err)
	}
	if err := c.Disagg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.PeerHints.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Affinity.TTL < 0 {
		errs = append(errs, fmt.Errorf("router: affinity TTL %v must be >= 0", c.Affinity.TTL))
	}
	if a := c.Affinity; a.MaxSessions < 0 || a.MaxBytes < 0 || a.MaxIDBytes < 0 {
		errs = append(errs, fmt.Errorf("router: affinity max sessions %d, max bytes %d, max id bytes %d: negative",
			a.MaxSessions, a.MaxBytes, a.MaxIDBytes))
	}
	return errors.Join(errs...)
}
