package app

import (
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
)

// engineTiers applies a MockerConfig.Tiers spec (validated) to e: host
// and disk capacities, and a G4 store of the worker's own when the spec
// names one and e has none (kvrouter up hands every worker the fleet's).
func engineTiers(e *mocker.Config, spec string) {
	t, err := mocker.ParseTierSizes(spec)
	if err != nil || !t.Enabled() {
		return
	}
	shared := e.Tiers.Shared
	e.Tiers = t.Engine(e.Tiers, e.NumBlocks)
	e.Tiers.Shared = shared
	if n := t.SharedBlocks(e.NumBlocks); n > 0 && shared == nil {
		e.Tiers.Shared = mocker.NewSharedStore(mocker.SharedConfig{Blocks: n,
			Worker: kvevents.Worker{ID: mocker.SharedStoreID + e.Worker.ID}})
	}
}
