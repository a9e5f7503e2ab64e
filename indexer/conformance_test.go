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
}{
	{"radix", func() indexer.Index { return indexer.NewRadix(indexer.Config{}) }},
	{"flash", func() indexer.Index { return indexer.NewFlash(indexer.Config{}) }},
	{"flash-stride=1", func() indexer.Index { return indexer.NewFlash(indexer.Config{Stride: 1}) }},
	{"flash-stride=2", func() indexer.Index { return indexer.NewFlash(indexer.Config{Stride: 2}) }},
	{"flash-stride=3", func() indexer.Index { return indexer.NewFlash(indexer.Config{Stride: 3}) }},
	{"reference", func() indexer.Index { return indexertest.NewReference() }},
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
	for _, impl := range implementations[:5] {
		t.Run(impl.name, func(t *testing.T) { indexertest.RunDifferential(t, impl.new, n) })
	}
}
