package replay

import (
	"slices"
	"testing"

	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/router"
)

// A -nofit arm builds its fleet with the router's timing fit off, even
// when the shared Frontend adjustment turns it on; a plain arm keeps the
// default (on); every fleet gets the per-worker speedup ratios.
func TestArmsFleetConfig(t *testing.T) {
	arms, err := ParseArms("kv, kv-nofit,load,approx-nofit")
	if err != nil {
		t.Fatal(err)
	}
	want := []Arm{{"kv", router.PolicyKV, false}, {"kv-nofit", router.PolicyKV, true},
		{"load", router.PolicyLoad, false}, {"approx-nofit", router.PolicyApprox, true}}
	if !slices.Equal(arms, want) {
		t.Fatalf("ParseArms = %+v, want %+v", arms, want)
	}
	for _, bad := range []string{"kv-fit", "nofit", "-nofit", "kv,"} {
		if a, err := ParseArms(bad); err == nil {
			t.Errorf("ParseArms(%q) = %+v, want an error", bad, a)
		}
	}
	ratios := []float64{8, 8, 2, 2}
	cfg := Compare{Arms: arms, SpeedupRatios: ratios, Seed: 3,
		Frontend: func(fc *frontend.Config) { fc.TimingFit = true }}
	for _, a := range cfg.arms() {
		fc := cfg.fleetConfig(a)
		if fc.Frontend.TimingFit == a.NoTimingFit || fc.Frontend.Router.Policy != a.Policy || fc.Frontend.Seed != 3 ||
			!slices.Equal(fc.SpeedupRatios, ratios) {
			t.Errorf("arm %+v: fleet timing fit %v, policy %v, seed %d, ratios %v", a,
				fc.Frontend.TimingFit, fc.Frontend.Router.Policy, fc.Frontend.Seed, fc.SpeedupRatios)
		}
	}
	// Without Arms, one arm per policy, fit on by default.
	cfg = Compare{Policies: []router.Policy{router.PolicyKV, router.PolicyRoundRobin}}
	got := cfg.arms()
	if len(got) != 2 || got[1] != (Arm{"round-robin", router.PolicyRoundRobin, false}) ||
		!cfg.fleetConfig(got[0]).Frontend.TimingFit {
		t.Errorf("arms from policies: %+v", got)
	}
	// The preset comes first, then the knob overrides, then Frontend.
	credit := 2.5
	cfg = Compare{Preset: "dynamo", OverlapCredit: &credit,
		Frontend: func(fc *frontend.Config) { fc.Router.Selector.Temperature = 0.5 }}
	dyn, err := router.Preset("dynamo")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.fleetConfig(Arm{Name: "kv", Policy: router.PolicyKV}).Frontend.Router.Selector
	if s.Cost != dyn.Selector.Cost || s.OverlapCredit != 2.5 || s.PrefillLoadScale != dyn.Selector.PrefillLoadScale || s.Temperature != 0.5 {
		t.Errorf("preset dynamo, credit 2.5, temperature 0.5: got %+v", s)
	}
}
