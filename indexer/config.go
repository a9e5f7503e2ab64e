package indexer

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Config configures the indexes of this package. Each field's zero value
// means its default, so Config{} is usable.
type Config struct {
	// Stride is Flash's jump-search stride J in blocks. Default 64.
	Stride int `yaml:"stride"`
	// BlocksPerWorker is a capacity hint: the number of blocks one
	// worker+rank is expected to hold at most (its engine's KV cache size
	// in blocks, e.g. 16384). Flash and Radix size each worker's table for
	// it when they first see the worker, instead of growing it by doubling
	// (rehashing and reallocating on the event path). 0 = no hint. Memory
	// per worker is about 24 bytes per hinted block up front.
	BlocksPerWorker int `yaml:"blocks_per_worker"`
	// Writers is the number of Concurrent writer goroutines. Default
	// runtime.GOMAXPROCS(0) at construction.
	Writers int `yaml:"writers"`
	// QueueSize is the capacity, in events, of each Concurrent writer's
	// queue. Apply blocks while the chosen queue is full. Default 1024.
	QueueSize int `yaml:"queue_size"`
	// TTL is how long Approx keeps a routed request's blocks. Default 120 s.
	TTL time.Duration `yaml:"ttl"`
	// MaxBlocks is the number of (worker, block) pairs above which Approx
	// prunes in expiry order. Default 1<<20.
	MaxBlocks int `yaml:"max_blocks"`
	// PruneFraction is the fraction of MaxBlocks Approx prunes down to.
	// Default 0.8.
	PruneFraction float64 `yaml:"prune_fraction"`
	// Events are optional callbacks (Concurrent only).
	Events Events `yaml:"-"`
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
)

// DefaultConfig returns the defaults of DESIGN.md §3 with Writers set to
// runtime.GOMAXPROCS(0).
func DefaultConfig() Config {
	return Config{
		Stride:        DefaultStride,
		Writers:       runtime.GOMAXPROCS(0),
		QueueSize:     DefaultQueueSize,
		TTL:           DefaultTTL,
		MaxBlocks:     DefaultMaxBlocks,
		PruneFraction: DefaultPruneFraction,
	}
}

// Validate reports every out-of-range field (zero means default and is
// valid).
func (c Config) Validate() error {
	var errs []error
	if c.Stride < 0 {
		errs = append(errs, fmt.Errorf("indexer: stride %d < 0", c.Stride))
	}
	if c.BlocksPerWorker < 0 {
		errs = append(errs, fmt.Errorf("indexer: blocks per worker %d < 0", c.BlocksPerWorker))
	}
	if c.Writers < 0 {
		errs = append(errs, fmt.Errorf("indexer: writers %d < 0", c.Writers))
	}
	if c.QueueSize < 0 {
		errs = append(errs, fmt.Errorf("indexer: queue size %d < 0", c.QueueSize))
	}
	if c.TTL < 0 {
		errs = append(errs, fmt.Errorf("indexer: ttl %v < 0", c.TTL))
	}
	if c.MaxBlocks < 0 {
		errs = append(errs, fmt.Errorf("indexer: max blocks %d < 0", c.MaxBlocks))
	}
	if c.PruneFraction < 0 || c.PruneFraction >= 1 {
		errs = append(errs, fmt.Errorf("indexer: prune fraction %v not in [0, 1)", c.PruneFraction))
	}
	return errors.Join(errs...)
}

// withDefaults fills zero fields with defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Stride <= 0 {
		c.Stride = d.Stride
	}
	if c.Writers <= 0 {
		c.Writers = d.Writers
	}
	if c.QueueSize <= 0 {
		c.QueueSize = d.QueueSize
	}
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
