package indexer_test

import (
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/indexer/indexertest"
)

// groupInners are the inner indexes the group overlay runs over; the
// scripts' output is identical on each.
var groupInners = []struct {
	name string
	new  func() indexer.Index
}{
	{"radix", func() indexer.Index { return indexer.NewRadix(indexer.RadixConfig{}) }},
	{"flash", func() indexer.Index { return indexer.NewFlash(indexer.FlashConfig{}) }},
	{"flash-stride=2", func() indexer.Index { return indexer.NewFlash(indexer.FlashConfig{Stride: 2}) }},
	{"sharded-flash=3", func() indexer.Index {
		return indexer.NewSharded(3, func() indexer.Index { return indexer.NewFlash(indexer.FlashConfig{}) })
	}},
}

func TestGroupsScripts(t *testing.T) {
	for _, in := range groupInners {
		t.Run(in.name, func(t *testing.T) { indexertest.RunGroups(t, in.new) })
	}
}

// TestGroupsConformance: without group events the overlay is its inner
// index (every conformance script, byte for byte).
func TestGroupsConformance(t *testing.T) {
	for _, in := range groupInners[:3] {
		t.Run(in.name, func(t *testing.T) {
			indexertest.RunConformance(t, func() indexer.Index { return indexer.NewGroups(in.new(), indexer.GroupsConfig{}) })
		})
	}
}

func TestGroupsDifferential(t *testing.T) {
	n := 1500
	if testing.Short() || raceEnabled {
		n = 100
	}
	// Not Sharded: its full-attention parent rules look within a shard,
	// which the reference does not model (TestDifferential covers them).
	for _, in := range groupInners[:3] {
		t.Run(in.name, func(t *testing.T) { indexertest.RunGroupsDifferential(t, in.new, n) })
	}
}
