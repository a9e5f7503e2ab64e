package indexer

import (
	"errors"
	"fmt"
)

// GroupsConfig configures Groups (NewGroups).
type GroupsConfig struct {
	// FullOnly credits the full-attention group alone, as a router that
	// knows nothing of groups does: the measurement baseline. The groups'
	// blocks are still kept (Stats, Explain). Default false.
	FullOnly bool `yaml:"full_only"`
	// BlockSize is B in tokens, which turns a sliding window of W tokens
	// into the ceil((W-1)/B) blocks it needs. Default 16 (vLLM's); the
	// router sets its own.
	BlockSize int `yaml:"block_size"`
	// MaxPending bounds, per worker+rank, the group stores held until
	// their parent is known; beyond it the oldest is dropped and counted.
	// Default 64.
	MaxPending int `yaml:"max_pending"`
	// MaxGroups bounds the non-full groups of one worker+rank (DESIGN.md
	// §12); a store naming one more is rejected. Default 8.
	MaxGroups int `yaml:"max_groups"`
}

// Bounds of GroupsConfig.
const (
	MaxGroupsPending = 1 << 16
	MaxGroupsGroups  = 256
)

// DefaultGroupsConfig returns Groups' defaults.
func DefaultGroupsConfig() GroupsConfig {
	return GroupsConfig{BlockSize: 16, MaxPending: 64, MaxGroups: 8}
}

// Validate reports every out-of-range field (zero means default).
func (c GroupsConfig) Validate() error {
	var errs []error
	if c.BlockSize < 0 {
		errs = append(errs, fmt.Errorf("indexer: groups block size %d is negative", c.BlockSize))
	}
	if c.MaxPending < 0 || c.MaxPending > MaxGroupsPending {
		errs = append(errs, fmt.Errorf("indexer: groups max pending %d not in [0, %d]", c.MaxPending, MaxGroupsPending))
	}
	if c.MaxGroups < 0 || c.MaxGroups > MaxGroupsGroups {
		errs = append(errs, fmt.Errorf("indexer: groups max groups %d not in [0, %d]", c.MaxGroups, MaxGroupsGroups))
	}
	return errors.Join(errs...)
}

func (c GroupsConfig) withDefaults() GroupsConfig {
	d := DefaultGroupsConfig()
	if c.BlockSize <= 0 {
		c.BlockSize = d.BlockSize
	}
	if c.MaxPending <= 0 {
		c.MaxPending = d.MaxPending
	}
	if c.MaxGroups <= 0 {
		c.MaxGroups = d.MaxGroups
	}
	c.MaxPending, c.MaxGroups = min(c.MaxPending, MaxGroupsPending), min(c.MaxGroups, MaxGroupsGroups)
	return c
}
