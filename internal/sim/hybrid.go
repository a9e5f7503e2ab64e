package sim

import (
	"errors"
	"slices"

	"github.com/kvrouter/kvrouter/router"
)

// Hybrid models (DESIGN.md §13): Config.Engine.Hybrid makes every engine
// a hybrid model (mocker.HybridConfig; `--model-kind hybrid-swa` or
// `hybrid-mamba`) whose cached tokens are the joint hit over its groups,
// and whose events carry the second group (kvevents.Event.Group). Every
// event reaches the router, whose index is the group overlay
// (indexer.Groups): kv credits the joint match, kv-full-only (the overlay
// with GroupsConfig.FullOnly) full attention alone.

// validateHybrid reports the features a hybrid engine does not model:
// lower tiers, disaggregated hops and peer-KV pulls (mocker rejects the
// requests).
func (c *Config) validateHybrid() error {
	if !c.Engine.Hybrid.Enabled() {
		return nil
	}
	var errs []error
	if c.Tiers.Enabled() {
		errs = append(errs, errors.New("sim: a hybrid model with --tiers is not modelled"))
	}
	if c.Disagg.Enabled() {
		errs = append(errs, errors.New("sim: a hybrid model with --disagg is not modelled"))
	}
	if slices.Contains(c.Router.EnableFeature, router.FeaturePeerKVHints) {
		errs = append(errs, errors.New("sim: a hybrid model with peer-KV hints is not modelled"))
	}
	return errors.Join(errs...)
}
