package mocker

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
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

// TierSizes are the capacities of an engine's lower tiers (DESIGN.md §7):
// G2 host and G3 disk per engine, G4 one store shared by a fleet. It is
// the parsed form of the --tiers spec; links, block bytes and the offload
// pipeline come from TierConfig. The zero value is G1 only.
type TierSizes struct {
	Host, Disk, Shared TierSize
}

// Enabled reports whether any lower tier is configured.
func (t TierSizes) Enabled() bool { return t != TierSizes{} }

// String is the spec ParseTierSizes reads back ("" for G1 only).
func (t TierSizes) String() string {
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

// ParseTierSizes parses "host=4x,disk=16x,shared=64x": each tier's
// capacity as a multiple of an engine's device blocks ("4x") or in blocks
// ("65536"). "" and "none" mean G1 only. Every bad part is reported.
func ParseTierSizes(s string) (TierSizes, error) {
	var t TierSizes
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
			errs = append(errs, fmt.Errorf("mocker: tiers: %q is not host=, disk= or shared=", part))
			continue
		}
		if m, isMult := strings.CutSuffix(val, "x"); isMult {
			v, err := strconv.ParseFloat(m, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				errs = append(errs, fmt.Errorf("mocker: tiers: %s=%q: want a positive multiple like 4x", name, val))
				continue
			}
			*dst = TierSize{Mult: v} // a repeated name: the last wins
			continue
		}
		v, err := strconv.Atoi(val)
		if err != nil || v <= 0 {
			errs = append(errs, fmt.Errorf("mocker: tiers: %s=%q: want blocks (a positive integer) or a multiple like 4x", name, val))
			continue
		}
		*dst = TierSize{Blocks: v}
	}
	return t, errors.Join(errs...)
}

// SharedStoreID names a G4 store in KV events, apart from the workers'
// ids (a simulator's 0..Workers-1, a fleet's 1..N); a worker with a store
// of its own names it SharedStoreID + its id.
const SharedStoreID = 1 << 40

// Engine returns tc with t's host and disk capacities for an engine of
// numBlocks device blocks (the shared store is the caller's: one per
// fleet, SharedBlocks).
func (t TierSizes) Engine(tc TierConfig, numBlocks int) TierConfig {
	tc.HostBlocks = t.Host.blocks(numBlocks)
	tc.DiskBlocks = t.Disk.blocks(numBlocks)
	return tc
}

// SharedBlocks is the G4 store's capacity for engines of numBlocks device
// blocks; 0: no G4.
func (t TierSizes) SharedBlocks(numBlocks int) int { return t.Shared.blocks(numBlocks) }
