package replay

import (
	"fmt"
	"strings"

	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/router"
)

// NoFitSuffix, appended to a policy name in a --compare list
// ("kv-nofit"), runs that policy with serve's online timing fit off
// (frontend.Config.TimingFit false: every worker priced with the
// DESIGN.md §6 prior), so one run compares the fit on and off.
const NoFitSuffix = "-nofit"

// Arm is one fleet of a comparison: a routing policy and whether the
// router fits each worker's timing online.
type Arm struct {
	// Name labels the arm's report ("kv", "kv-nofit").
	Name string
	// Policy is the router's policy.
	Policy router.Policy
	// NoTimingFit turns the router's timing fit off (frontend.Config.TimingFit).
	NoTimingFit bool
}

// ParseArms parses "kv,kv-nofit,load": router.ParsePolicy names, each
// optionally with NoFitSuffix.
func ParseArms(s string) ([]Arm, error) {
	var out []Arm
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		base, nofit := strings.CutSuffix(name, NoFitSuffix)
		p, err := router.ParsePolicy(base)
		if err != nil {
			return nil, fmt.Errorf("replay: %q: %w (optionally with suffix %s)", name, err, NoFitSuffix)
		}
		out = append(out, Arm{Name: name, Policy: p, NoTimingFit: nofit})
	}
	return out, nil
}

// arms is cfg's arms: Arms, else one per policy with the fit on.
func (cfg *Compare) arms() []Arm {
	if len(cfg.Arms) > 0 {
		return cfg.Arms
	}
	out := make([]Arm, len(cfg.Policies))
	for i, p := range cfg.Policies {
		out[i] = Arm{Name: p.String(), Policy: p}
	}
	return out
}

// fleetConfig is arm a's fleet: the policy and seed, the preset and the
// knob overrides, then cfg.Frontend's adjustments, then the arm's timing
// fit switch (so a shared adjustment cannot turn the fit back on for a
// -nofit arm).
func (cfg *Compare) fleetConfig(a Arm) fleet.Config {
	fc := frontend.DefaultConfig()
	fc.Router.Policy, fc.Seed = a.Policy, cfg.Seed
	if cfg.Preset != "" {
		if rc, err := router.Preset(cfg.Preset); err == nil { // Run validated it
			fc.Router.Selector, fc.Router.Predict = rc.Selector, rc.Predict
		}
	}
	if cfg.OverlapCredit != nil {
		fc.Router.Selector.OverlapCredit = *cfg.OverlapCredit
	}
	if cfg.PrefillLoadScale != nil {
		fc.Router.Selector.PrefillLoadScale = *cfg.PrefillLoadScale
	}
	if cfg.Frontend != nil {
		cfg.Frontend(&fc)
	}
	if a.NoTimingFit {
		fc.TimingFit = false
	}
	return fleet.Config{Workers: cfg.Workers, Engine: cfg.Engine, SpeedupRatios: cfg.SpeedupRatios,
		Frontend: fc, Direct: cfg.Direct, Logger: cfg.Logger}
}
