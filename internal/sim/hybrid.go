package sim

import (
	"errors"
	"slices"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
)

// Hybrid models (DESIGN.md §13): Config.Engine.Hybrid makes every engine
// a hybrid model (mocker.HybridConfig; `--model-kind hybrid-swa` or
// `hybrid-mamba`) whose cached tokens are the joint hit over its groups,
// and whose events carry the second group (kvevents.Event.Group).
//
// The router's index has no groups: it would file a group's stores and
// removes as full-attention blocks. routerEvents keeps those events from
// it, so the kv policy credits full attention alone, what every router
// does today; the regret report's chosen (credited) vs actual (the joint
// hit) blocks measure the over-prediction. The index's group overlay
// (indexer groups) replaces this filter: then the events go through, the
// kv policy credits the joint match, and a kv-full-only variant is the
// overlay with full attention only.

// routerEvents returns the events the router's index applies: the
// full-attention group's (all of them for a model without groups).
func routerEvents(evs []kvevents.Event) []kvevents.Event {
	if !slices.ContainsFunc(evs, func(ev kvevents.Event) bool { return !ev.Group.IsZero() }) {
		return evs
	}
	out := make([]kvevents.Event, 0, len(evs))
	for _, ev := range evs {
		if ev.Group.IsZero() {
			out = append(out, ev)
		}
	}
	return out
}

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
