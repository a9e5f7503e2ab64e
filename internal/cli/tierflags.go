package cli

import (
	"strconv"

	"github.com/spf13/pflag"

	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// onboardFlag is a boolean flag over selector.Config.Onboard: true sets
// selector.DefaultOnboard (the mocker's default links), false the zero
// model (off). A config file may set other links; the flag then reads
// true.
type onboardFlag struct{ p *selector.Onboard }

func (f onboardFlag) String() string {
	if f.p == nil {
		return "false"
	}
	return strconv.FormatBool(!f.p.IsZero())
}

func (f onboardFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	if on != !f.p.IsZero() {
		*f.p = selector.Onboard{}
		if on {
			*f.p = selector.DefaultOnboard()
		}
	}
	return nil
}

func (onboardFlag) Type() string     { return "bool" }
func (onboardFlag) IsBoolFlag() bool { return true }

// BindTiers binds the router's storage-tier knobs (DESIGN.md §7) that
// serve's other flags do not: the G4 credit, the cross-tier view and the
// onboarding cost.
func BindTiers(f *pflag.FlagSet, rc *router.Config) {
	sc := &rc.Selector
	f.Float64Var(&sc.SharedWeight, "shared-weight", sc.SharedWeight, "credit per block of the fleet's shared G4 store beyond the worker's own tiers (0 = G4 counts only after onboarding)")
	f.BoolVar(&rc.TierChains, "tier-chains", rc.TierChains, "read a worker's KV as one prefix chain across tiers (a host block under a device parent is accepted; snapshots carry it)")
	fl := f.VarPF(onboardFlag{&sc.Onboard}, "onboard-cost", "", "time cost: charge lower-tier hits the load time over the default PCIe/NVMe/network links (selector.DefaultOnboard)")
	fl.NoOptDefVal = "true"
}

// BindEngineTiers binds the engine's lower-tier flags (DESIGN.md §7),
// the same as sim's: the tier spec and the offload policy.
func BindEngineTiers(f *pflag.FlagSet, spec *string, e *mocker.Config) {
	f.StringVar(spec, "tiers", *spec, "lower KV tiers: host=4x,disk=16x[,shared=N], each a multiple of --num-blocks or a block count (default: G1 only)")
	f.BoolVar(&e.Tiers.WriteThrough, "write-through", e.Tiers.WriteThrough, "tiers: offload every computed block (default: offload on G1 eviction)")
	f.IntVar(&e.Tiers.MinReuse, "offload-min-reuse", e.Tiers.MinReuse, "tiers: offload only blocks reused at least this many times (0 = all)")
}
