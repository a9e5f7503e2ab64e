package benchindex

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
)

// NewTargetFactory returns the factory of one of our indexes ("radix" or
// "flash") behind indexer.Concurrent with the given number of sticky
// writers (0 = GOMAXPROCS), sharded by worker into as many shards as
// writers (NewShardedTargetFactory).
func NewTargetFactory(name string, writers int, tune ...func(*TargetConfig)) (TargetFactory, error) {
	return NewShardedTargetFactory(name, writers, 0, tune...)
}

// NewShardedTargetFactory is NewTargetFactory with the index split by
// worker into shards indexer.Sharded shards (0 = one per writer; 1 = one
// plain index). With one shard per writer, each writer goroutine applies
// its workers' events under its own shard's lock, so writers do not
// serialize on one write lock; lookups ask every shard. Each tune function
// adjusts the indexes' TargetConfig (e.g. the capacity hint
// BlocksPerWorker).
func NewShardedTargetFactory(name string, writers, shards int, tune ...func(*TargetConfig)) (TargetFactory, error) {
	var one func(TargetConfig) indexer.Index
	switch name {
	case IndexRadix:
		one = func(c TargetConfig) indexer.Index { return indexer.NewRadix(c.Radix) }
	case IndexFlash:
		one = func(c TargetConfig) indexer.Index { return indexer.NewFlash(c.Flash) }
	default:
		return TargetFactory{}, fmt.Errorf("benchindex: unknown index %q", name)
	}
	if writers < 0 || shards < 0 {
		return TargetFactory{}, fmt.Errorf("benchindex: writers %d / shards %d < 0", writers, shards)
	}
	mk := one
	if shards != 1 {
		mk = func(c TargetConfig) indexer.Index {
			n := shards
			if n == 0 {
				n = c.Concurrent.Writers
			}
			if n == 1 {
				return one(c)
			}
			return indexer.NewSharded(n, func() indexer.Index { return one(c) })
		}
	}
	return TargetFactory{Name: name, New: func() (Target, error) {
		return NewIndexTarget(mk, writers, tune...)
	}}, nil
}

// IndexTarget drives an indexer.Index through indexer.Concurrent: lookups
// inline on the readers (allocation-free through AppendMatches and a
// per-reader buffer), events to the sticky writers.
type IndexTarget struct {
	inner   indexer.Index
	conc    *indexer.Concurrent
	scratch []readerScratch

	wg     sync.WaitGroup
	cancel context.CancelFunc
	runErr error
}

// readerScratch is padded to its own cache lines so readers do not share one.
type readerScratch struct {
	buf indexer.Overlaps
	_   [64]byte
}

// TargetConfig holds the configs an IndexTarget's indexes are built with:
// the wrapped index's (Flash's or Radix's, whichever mk builds) and its
// Concurrent's. Default DefaultTargetConfig.
type TargetConfig struct {
	// Flash configures a wrapped Flash. Default indexer.DefaultFlashConfig.
	Flash indexer.FlashConfig
	// Radix configures a wrapped Radix. Default indexer.DefaultRadixConfig.
	Radix indexer.RadixConfig
	// Concurrent configures the sticky writers. Default
	// indexer.DefaultConcurrentConfig.
	Concurrent indexer.ConcurrentConfig
}

// DefaultTargetConfig returns each index kind's defaults.
func DefaultTargetConfig() TargetConfig {
	return TargetConfig{Flash: indexer.DefaultFlashConfig(), Radix: indexer.DefaultRadixConfig(),
		Concurrent: indexer.DefaultConcurrentConfig()}
}

// Validate reports every problem of every index kind's config, joined.
func (c TargetConfig) Validate() error {
	return errors.Join(c.Flash.Validate(), c.Radix.Validate(), c.Concurrent.Validate())
}

// BlocksPerWorker returns a tune function setting the capacity hint of
// both index kinds to n blocks per worker.
func BlocksPerWorker(n int) func(*TargetConfig) {
	return func(c *TargetConfig) { c.Flash.BlocksPerWorker, c.Radix.BlocksPerWorker = n, n }
}

// NewIndexTarget wraps the index mk builds in a Concurrent with writers
// writer goroutines (0 = GOMAXPROCS), its TargetConfig adjusted by tune.
func NewIndexTarget(mk func(TargetConfig) indexer.Index, writers int, tune ...func(*TargetConfig)) (*IndexTarget, error) {
	cfg := DefaultTargetConfig()
	if writers > 0 {
		cfg.Concurrent.Writers = writers
	}
	for _, t := range tune {
		t(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &IndexTarget{inner: mk(cfg)}
	t.conc = indexer.NewConcurrent(t.inner, cfg.Concurrent)
	return t, nil
}

// Index returns the wrapped index (for tests and reports).
func (t *IndexTarget) Index() indexer.Index { return t.inner }

// Start implements Target.
func (t *IndexTarget) Start(ctx context.Context, readers int) error {
	t.scratch = make([]readerScratch, readers)
	ctx, t.cancel = context.WithCancel(ctx)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if err := t.conc.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.runErr = err
		}
	}()
	return nil
}

// Submit implements Target.
func (t *IndexTarget) Submit(ev *kvevents.Event) error { return t.conc.Apply(ev) }

// Lookup implements Target: the deepest overlap over all workers.
func (t *IndexTarget) Lookup(r, _ int, locals []uint64) int {
	sc := &t.scratch[r]
	sc.buf = t.conc.AppendMatches(sc.buf[:0], locals)
	best := 0
	for _, o := range sc.buf {
		best = max(best, o.Blocks)
	}
	return best
}

// Queued implements Target.
func (t *IndexTarget) Queued() int64 { return int64(t.conc.Stats().Queued) }

// Drain implements Drainer.
func (t *IndexTarget) Drain(ctx context.Context) error { return t.conc.Flush(ctx) }

// Finish implements Target.
func (t *IndexTarget) Finish(ctx context.Context) (Final, error) {
	var ferr error
	if t.cancel != nil { // started
		ferr = t.conc.Flush(ctx)
		t.cancel()
		t.wg.Wait()
	}
	st := t.inner.Stats()
	return Final{Blocks: st.Blocks, Bytes: st.Bytes, Applied: st.Applied, Rejected: st.Rejected,
			SafeStarted: st.SafeStarted, SafeRedone: st.SafeRedone},
		errors.Join(ferr, t.runErr)
}
