package sim

import (
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
)

// engineTiers returns the engines' tier configuration for one fleet,
// building the fleet's shared store when G4 is on.
func engineTiers(c *Config) mocker.TierConfig {
	n := c.Engine.NumBlocks
	tc := c.Tiers.Engine(c.Engine.Tiers, n)
	tc.Shared = nil
	if b := c.Tiers.SharedBlocks(n); b > 0 {
		tc.Shared = mocker.NewSharedStore(mocker.SharedConfig{Blocks: b, Worker: kvevents.Worker{ID: mocker.SharedStoreID}})
	}
	return tc
}

// tierNames are the keys of PolicyReport.TierHitRate, by kvevents.Tier.
var tierNames = [kvevents.NumTiers]string{"device", "host", "disk", "shared"}
