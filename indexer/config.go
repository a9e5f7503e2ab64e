package indexer

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Each index kind has its own config (NewFlash takes a FlashConfig, NewRadix
// a RadixConfig, NewConcurrent a ConcurrentConfig, NewApprox an
// ApproxConfig), so a program embedding one index sets only that index's
// knobs. Every field's zero value means its default, so the zero config of
// each kind is usable.

// FlashConfig configures Flash (NewFlash).
type FlashConfig struct {
	// Stride is the jump-search stride J in blocks (DESIGN.md §3).
	// Default 64; 0 = default.
	Stride int `yaml:"stride"`
	// BlocksPerWorker is a capacity hint: the number of blocks one
	// worker+rank is expected to hold at most (its engine's KV cache size
	// in blocks, e.g. 16384). Flash sizes each worker's tables for it when
	// it first sees the worker, instead of growing them by doubling
	// (rehashing and reallocating on the event path). Default 0 = no hint.
	// Memory per worker is about 14 bytes per hinted block up front (its
	// engine-hash table), plus ~11 in the shared prefix-id table.
	BlocksPerWorker int `yaml:"blocks_per_worker"`
}

// RadixConfig configures Radix (NewRadix).
type RadixConfig struct {
	// BlocksPerWorker is a capacity hint as FlashConfig.BlocksPerWorker:
	// Radix sizes each worker's engine-hash table for it when it first
	// sees the worker. Default 0 = no hint.
	BlocksPerWorker int `yaml:"blocks_per_worker"`
}

// ConcurrentConfig configures Concurrent (NewConcurrent).
type ConcurrentConfig struct {
	// Writers is the number of writer goroutines. Default
	// runtime.GOMAXPROCS(0) at construction (at most MaxWriters); 0 =
	// default; at most MaxWriters.
	Writers int `yaml:"writers"`
	// QueueSize is the capacity, in events, of each writer's queue. Apply
	// blocks while the chosen queue is full. Default 1024; 0 = default;
	// at most MaxQueueSize. Each queue is allocated whole at
	// construction.
	QueueSize int `yaml:"queue_size"`
	// Events are optional callbacks. Default none (nil callbacks are not
	// called).
	Events Events `yaml:"-"`
}

// ApproxConfig configures Approx (NewApprox).
type ApproxConfig struct {
	// TTL is how long a routed request's blocks are kept. Default 120 s;
	// 0 = default.
	TTL time.Duration `yaml:"ttl"`
	// MaxBlocks is the number of (worker, block) pairs above which Approx
	// prunes in expiry order. Default 1<<20; 0 = default.
	MaxBlocks int `yaml:"max_blocks"`
	// PruneFraction is the fraction of MaxBlocks Approx prunes down to, in
	// (0, 1). Default 0.8; 0 = default.
	PruneFraction float64 `yaml:"prune_fraction"`
}

// Events are optional callbacks, pebble style. Concurrent calls them from
// its writer goroutines, so they must be safe for concurrent use and cheap.
type Events struct {
	// OnApplied is called after an event was applied successfully.
	OnApplied func(ev *kvevents.Event)
	// OnRejected is called when the wrapped index rejected an event; err
	// wraps one of ErrUnknownParent, ErrSelfParent, ErrBadEvent.
	OnRejected func(ev *kvevents.Event, err error)
}

// Defaults of DESIGN.md §3.
const (
	DefaultStride        = 64
	DefaultQueueSize     = 1024
	DefaultTTL           = 120 * time.Second
	DefaultMaxBlocks     = 1 << 20
	DefaultPruneFraction = 0.8
	// MaxWriters and MaxQueueSize bound ConcurrentConfig: the writers'
	// queues are allocated up front (about 112 bytes per queued event).
	MaxWriters   = 1024
	MaxQueueSize = 1 << 16
)

// DefaultFlashConfig returns Flash's defaults (DESIGN.md §3): stride 64,
// no capacity hint.
func DefaultFlashConfig() FlashConfig { return FlashConfig{Stride: DefaultStride} }

// DefaultRadixConfig returns Radix's defaults: no capacity hint.
func DefaultRadixConfig() RadixConfig { return RadixConfig{} }

// DefaultConcurrentConfig returns Concurrent's defaults: Writers
// runtime.GOMAXPROCS(0), 1024 events per writer queue, no callbacks.
func DefaultConcurrentConfig() ConcurrentConfig {
	return ConcurrentConfig{Writers: min(runtime.GOMAXPROCS(0), MaxWriters), QueueSize: DefaultQueueSize}
}

// DefaultApproxConfig returns Approx's defaults (DESIGN.md §3): TTL 120 s,
// pruning above 2^20 blocks down to 80%.
func DefaultApproxConfig() ApproxConfig {
	return ApproxConfig{TTL: DefaultTTL, MaxBlocks: DefaultMaxBlocks, PruneFraction: DefaultPruneFraction}
}

// Validate reports every out-of-range field (zero means default and is
// valid).
func (c FlashConfig) Validate() error {
	var errs []error
	if c.Stride < 0 {
		errs = append(errs, fmt.Errorf("indexer: flash stride %d < 0", c.Stride))
	}
	if c.BlocksPerWorker < 0 {
		errs = append(errs, fmt.Errorf("indexer: flash blocks per worker %d < 0", c.BlocksPerWorker))
	}
	return errors.Join(errs...)
}

// Validate reports every out-of-range field (zero means default and is
// valid).
func (c RadixConfig) Validate() error {
	if c.BlocksPerWorker < 0 {
		return fmt.Errorf("indexer: radix blocks per worker %d < 0", c.BlocksPerWorker)
	}
	return nil
}

// Validate reports every out-of-range field (zero means default and is
// valid).
func (c ConcurrentConfig) Validate() error {
	var errs []error
	if c.Writers < 0 || c.Writers > MaxWriters {
		errs = append(errs, fmt.Errorf("indexer: concurrent writers %d not in [0, %d]", c.Writers, MaxWriters))
	}
	if c.QueueSize < 0 || c.QueueSize > MaxQueueSize {
		errs = append(errs, fmt.Errorf("indexer: concurrent queue size %d not in [0, %d]", c.QueueSize, MaxQueueSize))
	}
	return errors.Join(errs...)
}

// Validate reports every out-of-range field (zero means default and is
// valid).
func (c ApproxConfig) Validate() error {
	var errs []error
	if c.TTL < 0 {
		errs = append(errs, fmt.Errorf("indexer: approx ttl %v < 0", c.TTL))
	}
	if c.MaxBlocks < 0 {
		errs = append(errs, fmt.Errorf("indexer: approx max blocks %d < 0", c.MaxBlocks))
	}
	if c.PruneFraction < 0 || c.PruneFraction >= 1 {
		errs = append(errs, fmt.Errorf("indexer: approx prune fraction %v not in [0, 1)", c.PruneFraction))
	}
	return errors.Join(errs...)
}

// withDefaults fills zero fields with defaults.
func (c FlashConfig) withDefaults() FlashConfig {
	if c.Stride <= 0 {
		c.Stride = DefaultStride
	}
	return c
}

// withDefaults fills zero fields with defaults, and clamps the sizes to
// their bounds (a config NewConcurrent is given unvalidated).
func (c ConcurrentConfig) withDefaults() ConcurrentConfig {
	d := DefaultConcurrentConfig()
	if c.Writers <= 0 {
		c.Writers = d.Writers
	}
	if c.QueueSize <= 0 {
		c.QueueSize = d.QueueSize
	}
	c.Writers, c.QueueSize = min(c.Writers, MaxWriters), min(c.QueueSize, MaxQueueSize)
	return c
}

// withDefaults fills zero fields with defaults.
func (c ApproxConfig) withDefaults() ApproxConfig {
	d := DefaultApproxConfig()
	if c.TTL <= 0 {
		c.TTL = d.TTL
	}
	if c.MaxBlocks <= 0 {
		c.MaxBlocks = d.MaxBlocks
	}
	if c.PruneFraction <= 0 {
		c.PruneFraction = d.PruneFraction
	}
	return c
}
