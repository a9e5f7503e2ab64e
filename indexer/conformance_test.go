package indexer_test

import (
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/indexer/indexertest"
)

// implementations are every Index under test; strides 1-3 push Flash's
// jump search through its bisection paths on short scripts.
var implementations = []struct {
	name string
	new  func() indexer.Index
	// ref is the differential reference (default NewReference): a
	// Sharded index applies the cross-worker parent rules within a shard.
	ref func() *indexertest.Reference
}{
	{"radix", func() indexer.Index { return indexer.NewRadix(indexer.RadixConfig{}) }, nil},
	{"flash", func() indexer.Index { return indexer.NewFlash(indexer.FlashConfig{}) }, nil},
	{"flash-stride=1", func() indexer.Index { return indexer.NewFlash(indexer.FlashConfig{Stride: 1}) }, nil},
	{"flash-stride=2", func() indexer.Index { return indexer.NewFlash(indexer.FlashConfig{Stride: 2}) }, nil},
	{"flash-stride=3", func() indexer.Index { return indexer.NewFlash(indexer.FlashConfig{Stride: 3}) }, nil},
	{"sharded-flash=3", func() indexer.Index {
		return exactNodes{indexer.NewSharded(3, func() indexer.Index { return indexer.NewFlash(indexer.FlashConfig{Stride: 2}) })}
	}, shardedRef(3)},
	{"sharded-radix=2", func() indexer.Index {
		return exactNodes{indexer.NewSharded(2, func() indexer.Index { return indexer.NewRadix(indexer.RadixConfig{}) })}
	}, shardedRef(2)},
	{"reference", func() indexer.Index { return indexertest.NewReference() }, nil},
}

// shardedRef is the reference of an n-shard Sharded index.
func shardedRef(n int) func() *indexertest.Reference {
	s := indexer.NewSharded(n, func() indexer.Index { return indexertest.NewReference() })
	return func() *indexertest.Reference {
		return indexertest.NewShardedReference(func(a, b uint64) bool { return s.ShardOf(a) == s.ShardOf(b) })
	}
}

// ours are the implementations other than the reference.
var ours = implementations[:len(implementations)-1]

// exactNodes reports a Sharded index's Stats with Nodes counted once per
// distinct prefix (Sharded sums its shards', counting a prefix held in two
// shards twice, by design), so that the suites can compare it with the
// reference; everything else is the Sharded index's own.
type exactNodes struct{ *indexer.Sharded }

func (x exactNodes) Stats() indexer.Stats {
	s := x.Sharded.Stats()
	ref := indexertest.NewReference()
	for _, ev := range x.Dump() {
		_ = ref.Apply(&ev)
	}
	s.Nodes = ref.Stats().Nodes
	return s
}

func TestConformance(t *testing.T) {
	for _, impl := range implementations {
		t.Run(impl.name, func(t *testing.T) { indexertest.RunConformance(t, impl.new) })
	}
}

func TestDifferential(t *testing.T) {
	n := 2000
	if testing.Short() || raceEnabled {
		n = 150
	}
	for _, impl := range ours {
		ref := impl.ref
		if ref == nil {
			ref = indexertest.NewReference
		}
		t.Run(impl.name, func(t *testing.T) { indexertest.RunDifferentialWith(t, impl.new, ref, n) })
	}
}
