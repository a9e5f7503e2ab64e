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
	cfg := CompareConfig{Arms: arms, SpeedupRatios: ratios, Seed: 3,
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
	cfg = CompareConfig{Policies: []router.Policy{router.PolicyKV, router.PolicyRoundRobin}}
	got := cfg.arms()
	if len(got) != 2 || got[1] != (Arm{"round-robin", router.PolicyRoundRobin, false}) ||
		!cfg.fleetConfig(got[0]).Frontend.TimingFit {
		t.Errorf("arms from policies: %+v", got)
	}
}
