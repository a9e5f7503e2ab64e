package router

import (
	"errors"

	"github.com/kvrouter/kvrouter/indexer"
)

// IndexConfig composes the configs of the indexes a router uses, one per
// index kind (DESIGN.md §3). Zero fields mean the indexer defaults.
type IndexConfig struct {
	// Flash configures the event-fed Flash indexes (the device tier's,
	// and every tier's without TierChains). Default
	// indexer.DefaultFlashConfig (stride 64, no capacity hint).
	Flash indexer.FlashConfig `yaml:"flash"`
	// Radix configures the event-fed Radix indexes (the lower tiers' with
	// TierChains, and a shell's choice of radix). Default
	// indexer.DefaultRadixConfig (no capacity hint).
	Radix indexer.RadixConfig `yaml:"radix"`
	// Concurrent configures the sticky writers a shell wraps each
	// event-fed index in (the router itself takes events inline). Default
	// indexer.DefaultConcurrentConfig (GOMAXPROCS writers, 1024 events per
	// queue).
	Concurrent indexer.ConcurrentConfig `yaml:"concurrent"`
	// Approx configures the approximate index of PolicyApprox and, with
	// its TTL replaced by Config.Predict.TTL, the predicted side index.
	// Default indexer.DefaultApproxConfig (TTL 120 s, 2^20 blocks, prune
	// to 80%).
	Approx indexer.ApproxConfig `yaml:"approx"`
	// Groups configures the KV cache group overlay every event-fed index
	// is wrapped in (indexer.Groups, DESIGN.md §13): hybrid workers are
	// credited their joint match. Its BlockSize is always
	// Config.BlockSize (Config.GroupsConfig). Default
	// indexer.DefaultGroupsConfig.
	Groups indexer.GroupsConfig `yaml:"groups"`
}

// DefaultIndexConfig returns every index kind's defaults (DESIGN.md §3).
func DefaultIndexConfig() IndexConfig {
	return IndexConfig{
		Flash:      indexer.DefaultFlashConfig(),
		Radix:      indexer.DefaultRadixConfig(),
		Concurrent: indexer.DefaultConcurrentConfig(),
		Approx:     indexer.DefaultApproxConfig(),
		Groups:     indexer.DefaultGroupsConfig(),
	}
}

// Validate reports every problem of every index kind's config, joined.
func (c IndexConfig) Validate() error {
	return errors.Join(c.Flash.Validate(), c.Radix.Validate(), c.Concurrent.Validate(), c.Approx.Validate(), c.Groups.Validate())
}

// GroupsConfig is c.Index.Groups with its block size c.BlockSize: a
// sliding window's blocks are the engines' (shells wrapping their own
// indexes in indexer.NewGroups use it).
func (c *Config) GroupsConfig() indexer.GroupsConfig {
	g := c.Index.Groups
	g.BlockSize = c.BlockSize
	return g
}
