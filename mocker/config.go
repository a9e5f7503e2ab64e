package mocker

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// Config configures one engine (one worker+rank). DESIGN.md §6 gives the
// defaults; DefaultConfig returns them.
type Config struct {
	// NumBlocks is the number of KV blocks on the device. Default 16384;
	// must be positive.
	NumBlocks int `yaml:"num_blocks"`
	// BlockSize is the number of tokens per block (and per hashed block in
	// KV events). Default 64; must be positive.
	BlockSize int `yaml:"block_size"`
	// MaxNumSeqs caps the running requests. Default 256; must be positive.
	MaxNumSeqs int `yaml:"max_num_seqs"`
	// MaxNumBatchedTokens is the token budget of one forward pass (prefill
	// chunk tokens plus one per decoding request). Default 8192; must be
	// positive.
	MaxNumBatchedTokens int `yaml:"max_num_batched_tokens"`
	// Watermark is the fraction of NumBlocks kept spare when admitting a
	// waiting request (running requests may use them). Default 0.01; zero
	// means no reserve. Must be in [0, 1).
	Watermark float64 `yaml:"watermark"`
	// EnablePrefixCaching turns on block caching, prefix reuse and KV
	// events. Default true; false (the zero value) caches nothing and emits
	// no events.
	EnablePrefixCaching bool `yaml:"enable_prefix_caching"`
	// SpeedupRatio divides the modeled pass time. Default 1. With a ratio r
	// > 0 a pass modeled to take m lasts m/r of simulated time and a
	// real-time shell sleeps m/r. With 0, no shell sleeps (Result.Sleep is
	// 0), but simulated time still advances by the unscaled model time m, so
	// a discrete-event simulator and the engine's per-request timings stay
	// meaningful. Must be finite and >= 0.
	SpeedupRatio float64 `yaml:"speedup_ratio"`
	// Worker names this engine in its KV events (WorkerID, DPRank). Default
	// zero value (worker 0, rank 0).
	Worker kvevents.Worker `yaml:"-"`
	// HashSeed is the local-hash seed (kvhash.Seed of the LoRA name and
	// cache namespace). Default kvhash.DefaultSeed; zero means
	// kvhash.DefaultSeed.
	HashSeed uint64 `yaml:"hash_seed"`
	// Tiers configures the lower tiers G2, G3 and G4 and the offload
	// pipeline (DESIGN.md §7). Default zero value: no lower tier, G1 only.
	// DefaultTiers gives G2 = 4x and G3 = 16x NumBlocks.
	Tiers TierConfig `yaml:"tiers"`
	// KVTransfer is the link a decode engine pulls a remote prefill
	// worker's blocks over (Request.RemoteBlocks, disagg.go). Default
	// DefaultKVTransferBandwidth and DefaultKVTransferLatency (25 GB/s,
	// 1 ms per transfer); zero Bandwidth means the default.
	KVTransfer Link `yaml:"kv_transfer"`
	// HoldTimeout is how long a finished Request.Hold keeps its blocks for
	// a pull that does not come. Default DefaultHoldTimeout (480 s); zero
	// means the default.
	HoldTimeout time.Duration `yaml:"hold_timeout"`
	// Hybrid makes the engine a hybrid model with a second KV cache group
	// (hybrid.go, DESIGN.md §13). Default zero value: full attention only.
	Hybrid HybridConfig `yaml:"hybrid"`
}

// DefaultConfig returns the defaults of DESIGN.md §6.
func DefaultConfig() Config {
	return Config{
		NumBlocks:           16384,
		BlockSize:           64,
		MaxNumSeqs:          256,
		MaxNumBatchedTokens: 8192,
		Watermark:           0.01,
		EnablePrefixCaching: true,
		SpeedupRatio:        1,
		HashSeed:            kvhash.DefaultSeed,
		KVTransfer:          defaultKVTransfer(),
		HoldTimeout:         DefaultHoldTimeout,
	}
}

// Validate reports every problem of c, joined.
func (c Config) Validate() error {
	var errs []error
	if c.NumBlocks <= 0 {
		errs = append(errs, fmt.Errorf("mocker: num_blocks %d must be positive", c.NumBlocks))
	}
	if c.BlockSize <= 0 {
		errs = append(errs, fmt.Errorf("mocker: block_size %d must be positive", c.BlockSize))
	}
	if c.MaxNumSeqs <= 0 {
		errs = append(errs, fmt.Errorf("mocker: max_num_seqs %d must be positive", c.MaxNumSeqs))
	}
	if c.MaxNumBatchedTokens <= 0 {
		errs = append(errs, fmt.Errorf("mocker: max_num_batched_tokens %d must be positive", c.MaxNumBatchedTokens))
	}
	if !(c.Watermark >= 0 && c.Watermark < 1) {
		errs = append(errs, fmt.Errorf("mocker: watermark %v must be in [0, 1)", c.Watermark))
	}
	if !(c.SpeedupRatio >= 0) || math.IsInf(c.SpeedupRatio, 0) {
		errs = append(errs, fmt.Errorf("mocker: speedup_ratio %v must be finite and >= 0", c.SpeedupRatio))
	}
	if b := c.KVTransfer.Bandwidth; !(b >= 0) || math.IsInf(b, 0) || c.KVTransfer.Latency < 0 || c.HoldTimeout < 0 {
		errs = append(errs, fmt.Errorf("mocker: kv_transfer %+v and hold_timeout %v must be finite and >= 0", c.KVTransfer, c.HoldTimeout))
	}
	if err := c.Tiers.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateHybrid(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// watermarkBlocks is the number of blocks admission keeps spare.
func (c Config) watermarkBlocks() int { return int(c.Watermark * float64(c.NumBlocks)) }

// PrefillTime is the modeled cost of a pass computing t prefill tokens
// (DESIGN.md §6): 4.21e-7*t² + 0.01518*t + 16.5 ms; 0 when t <= 0.
func PrefillTime(t int) time.Duration {
	if t <= 0 {
		return 0
	}
	x := float64(t)
	return msToDuration(4.21e-7*x*x + 0.01518*x + 16.5)
}

// DecodeTime is the modeled cost of the decode part of a pass when a fraction
// p of the KV blocks is in use (DESIGN.md §6): -25.74*p² + 54.01*p + 5.74 ms,
// with p clamped to [0, 1].
func DecodeTime(p float64) time.Duration {
	p = min(max(p, 0), 1)
	return msToDuration(-25.74*p*p + 54.01*p + 5.74)
}

// PassTime is the unscaled modeled duration of one forward pass with
// prefillTokens prefill tokens and decodes decoding requests while a fraction
// usage of the blocks is active: PrefillTime if there are prefill tokens plus
// DecodeTime if there are decodes (Dynamo's mocker also adds both costs of
// one iteration); 0 for an empty pass.
func PassTime(prefillTokens, decodes int, usage float64) time.Duration {
	var d time.Duration
	if prefillTokens > 0 {
		d += PrefillTime(prefillTokens)
	}
	if decodes > 0 {
		d += DecodeTime(usage)
	}
	return d
}

func msToDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}
