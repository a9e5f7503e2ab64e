package sim

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
)

// TierSize is the capacity of one lower tier: Mult times the engine's
// device blocks, or Blocks when Mult is 0. The zero value is no tier.
type TierSize struct {
	Mult   float64
	Blocks int
}

func (s TierSize) blocks(device int) int {
	if s.Mult > 0 {
		return int(math.Round(s.Mult * float64(device)))
	}
	return s.Blocks
}

func (s TierSize) String() string {
	if s.Mult > 0 {
		return strconv.FormatFloat(s.Mult, 'g', -1, 64) + "x"
	}
	return strconv.Itoa(s.Blocks)
}

// Tiers are the lower tiers of the simulated fleet (DESIGN.md §7): G2
// host and G3 disk per engine, G4 one store shared by the fleet (each
// policy's simulation has its own). The zero value is G1 only. Links,
// block bytes and the offload pipeline come from Config.Engine.Tiers.
type Tiers struct {
	Host, Disk, Shared TierSize
}

// Enabled reports whether any lower tier is configured.
func (t Tiers) Enabled() bool { return t != Tiers{} }

func (t Tiers) String() string {
	var parts []string
	for _, p := range []struct {
		name string
		s    TierSize
	}{{"host", t.Host}, {"disk", t.Disk}, {"shared", t.Shared}} {
		if p.s != (TierSize{}) {
			parts = append(parts, p.name+"="+p.s.String())
		}
	}
	return strings.Join(parts, ",")
}

// ParseTiers parses "host=4x,disk=16x,shared=64x": each tier's capacity
// as a multiple of an engine's device blocks ("4x") or in blocks ("65536").
// "" and "none" mean G1 only.
func ParseTiers(s string) (Tiers, error) {
	var t Tiers
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return t, nil
	}
	var errs []error
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		var dst *TierSize
		switch name {
		case "host":
			dst = &t.Host
		case "disk":
			dst = &t.Disk
		case "shared":
			dst = &t.Shared
		}
		if !ok || dst == nil {
			errs = append(errs, fmt.Errorf("sim: tiers: %q is not host=, disk= or shared=", part))
			continue
		}
		if m, isMult := strings.CutSuffix(val, "x"); isMult {
			v, err := strconv.ParseFloat(m, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				errs = append(errs, fmt.Errorf("sim: tiers: %s=%q: want a positive multiple like 4x", name, val))
				continue
			}
			dst.Mult = v
			continue
		}
		v, err := strconv.Atoi(val)
		if err != nil || v <= 0 {
			errs = append(errs, fmt.Errorf("sim: tiers: %s=%q: want blocks (a positive integer) or a multiple like 4x", name, val))
			continue
		}
		dst.Blocks = v
	}
	return t, errors.Join(errs...)
}

// SharedStoreID names the G4 store in KV events, apart from the workers'
// ids (the simulator's 0..Workers-1, a fleet's 1..N).
const SharedStoreID = 1 << 40

// Engine returns tc with t's host and disk capacities for an engine of
// numBlocks device blocks (the shared store is the caller's: one per
// fleet, SharedBlocks).
func (t Tiers) Engine(tc mocker.TierConfig, numBlocks int) mocker.TierConfig {
	tc.HostBlocks = t.Host.blocks(numBlocks)
	tc.DiskBlocks = t.Disk.blocks(numBlocks)
	return tc
}

// SharedBlocks is the G4 store's capacity for engines of numBlocks device
// blocks; 0: no G4.
func (t Tiers) SharedBlocks(numBlocks int) int { return t.Shared.blocks(numBlocks) }

// engineTiers returns the engines' tier configuration for one fleet,
// building the fleet's shared store when G4 is on.
func engineTiers(c *Config) mocker.TierConfig {
	n := c.Engine.NumBlocks
	tc := c.Tiers.Engine(c.Engine.Tiers, n)
	tc.Shared = nil
	if b := c.Tiers.SharedBlocks(n); b > 0 {
		tc.Shared = mocker.NewSharedStore(mocker.SharedConfig{Blocks: b, Worker: kvevents.Worker{ID: SharedStoreID}})
	}
	return tc
}

// tierNames are the keys of PolicyReport.TierHitRate, by kvevents.Tier.
var tierNames = [kvevents.NumTiers]string{"device", "host", "disk", "shared"}
