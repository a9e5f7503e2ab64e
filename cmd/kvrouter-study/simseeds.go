package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kvrouter/kvrouter/internal/sim"
	"github.com/kvrouter/kvrouter/internal/traces"
)

// simSeedsTrace is one trace's part of `sim --seeds ... --json`.
type simSeedsTrace struct {
	Trace    string            `json:"trace"`
	Capacity *sim.Capacity     `json:"capacity,omitempty"`
	Runs     []simTraceResult  `json:"runs"` // one per seed, in --seeds order
	Verdicts []sim.SeedVerdict `json:"seed_verdicts"`
}

// parseSeeds parses a comma-separated list of distinct seeds.
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	seen := map[uint64]bool{}
	for _, f := range splitList(s) {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seeds: %q: %w", f, err)
		}
		if seen[v] {
			return nil, fmt.Errorf("--seeds: seed %d given twice", v)
		}
		seen[v] = true
		out = append(out, v)
	}
	if len(out) < 2 {
		return nil, errors.New("--seeds needs at least two seeds (use --seed for one)")
	}
	return out, nil
}

// runSimSeeds runs every trace at every load once per seed. The capacity
// is measured once per trace, at the first seed (the capacity policy
// should not depend on the seed: keep round-robin). With jitter J > 0 the
// i-th of n seeds runs every load at (1 + J*d_i) times its rate, d_i
// spread evenly over [-1, 1]: the seed alone moves only the policies'
// random draws, which the time cost's deterministic tie-break leaves to
// an idle fleet's first decisions, so a small change of the arrival rate
// is what shows how much a cell's figures move by chance. Each run is the
// one `--seed N --capacity-rate-scale S` gives alone (S printed); text
// gets the capacity, the mean and range of every figure and each cell's
// seed verdict with the strict verdict of every seed.
func runSimSeeds(cmd *cobra.Command, cfg sim.Config, names []string, seeds []uint64, jitter float64, fractions []float64,
	capPolicy string, capScale float64, quiet bool, text io.Writer) ([]simSeedsTrace, []sim.SeedVerdict, error) {
	var out []simSeedsTrace
	var all []sim.SeedVerdict
	for _, name := range names {
		recs, err := traces.Load(name)
		if err != nil {
			return nil, nil, err
		}
		label := traces.Short(name)
		st := simSeedsTrace{Trace: label}
		tc := cfg
		tc.Trace = recs
		tc.Seed = seeds[0]
		var capy sim.Capacity
		if capScale > 0 {
			capy, err = sim.CapacityFromScale(tc, capScale)
		} else {
			cp, perr := sim.ParsePolicies(capPolicy)
			if perr != nil || len(cp) != 1 {
				return nil, nil, fmt.Errorf("--capacity-policy must name one policy: %q", capPolicy)
			}
			capCfg := tc
			capCfg.Policies = cp
			capy, err = sim.FindCapacity(cmd.Context(), capCfg, simProgress(cmd.ErrOrStderr(), quiet, label+" capacity"))
		}
		if err != nil {
			return nil, nil, fmt.Errorf("trace %s: %w", label, err)
		}
		st.Capacity = &capy
		fmt.Fprintf(text, "\n== trace %s ==\ncapacity (%s, %d workers, seed %d): %.3f req/s saturated = %.2fx the trace's %.3f req/s\n",
			label, capPolicy, cfg.Workers, seeds[0], capy.RequestsPerS, capy.RateScale, capy.TraceRate)
		for i, s := range seeds {
			tc.Seed = s
			scale := capy.RateScale * (1 + jitter*jitterOffset(i, len(seeds)))
			if jitter > 0 {
				fmt.Fprintf(text, "  seed %d: --capacity-rate-scale %g\n", s, scale)
			}
			res, err := runSimTrace(cmd, tc, label, fractions, true, capPolicy, scale, quiet, io.Discard, false)
			if err != nil {
				return nil, nil, fmt.Errorf("trace %s seed %d: %w", label, s, err)
			}
			st.Runs = append(st.Runs, res)
		}
		for j, fr := range fractions {
			reps := make([]sim.Report, len(seeds))
			for i := range seeds {
				reps[i] = st.Runs[i].Reports[j]
			}
			if sv, ok := sim.JudgeSeeds(reps, seeds, sim.PolicyKV, label, fr); ok {
				st.Verdicts = append(st.Verdicts, sv)
			}
		}
		fmt.Fprintln(text)
		if err := sim.WriteSeedSummary(text, label, st.Verdicts); err != nil {
			return nil, nil, err
		}
		out = append(out, st)
		all = append(all, st.Verdicts...)
	}
	return out, all, nil
}

// jitterOffset is d_i of runSimSeeds: i of n spread evenly over [-1, 1].
func jitterOffset(i, n int) float64 {
	if n < 2 {
		return 0
	}
	return 2*float64(i)/float64(n-1) - 1
}

// simSeedsMain is `sim --seeds`: runSimSeeds, the verdicts and, with
// --json, the JSON alone on stdout.
func simSeedsMain(cmd *cobra.Command, cfg sim.Config, names []string, seedList string, jitter float64, fractions []float64,
	capPolicy string, capScale float64, quiet, asJSON bool, outDir, preset string) error {
	seeds, err := parseSeeds(seedList)
	if err != nil {
		return err
	}
	switch {
	case cmd.Flags().Changed("seed"):
		return errors.New("--seeds and --seed exclude each other")
	case len(fractions) == 0:
		return errors.New("--seeds needs --loads")
	case outDir != "":
		return errors.New("--seeds does not write --out")
	case !(jitter >= 0 && jitter < 1):
		return fmt.Errorf("--load-jitter %v must be in [0, 1)", jitter)
	}
	text := cmd.OutOrStdout()
	if asJSON {
		text = cmd.ErrOrStderr()
	}
	res, svs, err := runSimSeeds(cmd, cfg, names, seeds, jitter, fractions, capPolicy, capScale, quiet, text)
	if err != nil {
		return err
	}
	fmt.Fprintln(text)
	sim.WriteSeedVerdicts(text, svs)
	if !asJSON {
		return nil
	}
	return writeJSON(cmd.OutOrStdout(), map[string]any{"preset": presetName(preset), "seeds": seeds, "load_jitter": jitter, "traces": res, "seed_verdicts": svs})
}
