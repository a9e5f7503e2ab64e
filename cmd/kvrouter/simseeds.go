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
// is measured once per trace, at the first seed, and reused by the others
// (the capacity policy should not depend on the seed: keep round-robin).
// Each seed's run is the one `--seed N` gives alone; text gets the
// capacity, the mean and range of every figure and each cell's seed
// verdict with the strict verdict of every seed.
func runSimSeeds(cmd *cobra.Command, cfg sim.Config, names []string, seeds []uint64, fractions []float64,
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
		scale := capScale
		for _, s := range seeds {
			tc := cfg
			tc.Trace = recs
			tc.Seed = s
			res, err := runSimTrace(cmd, tc, label, fractions, true, capPolicy, scale, quiet, io.Discard, false)
			if err != nil {
				return nil, nil, fmt.Errorf("trace %s seed %d: %w", label, s, err)
			}
			if st.Capacity == nil && res.Capacity != nil {
				st.Capacity = res.Capacity
				scale = res.Capacity.RateScale
				fmt.Fprintf(text, "\n== trace %s ==\ncapacity (%s, %d workers, seed %d): %.3f req/s saturated = %.2fx the trace's %.3f req/s\n",
					label, capPolicy, cfg.Workers, s, res.Capacity.RequestsPerS, res.Capacity.RateScale, res.Capacity.TraceRate)
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

// simSeedsMain is `sim --seeds`: runSimSeeds, the verdicts and, with
// --json, the JSON alone on stdout.
func simSeedsMain(cmd *cobra.Command, cfg sim.Config, names []string, seedList string, fractions []float64,
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
	}
	text := cmd.OutOrStdout()
	if asJSON {
		text = cmd.ErrOrStderr()
	}
	res, svs, err := runSimSeeds(cmd, cfg, names, seeds, fractions, capPolicy, capScale, quiet, text)
	if err != nil {
		return err
	}
	fmt.Fprintln(text)
	sim.WriteSeedVerdicts(text, svs)
	if !asJSON {
		return nil
	}
	return writeJSON(cmd.OutOrStdout(), map[string]any{"preset": presetName(preset), "seeds": seeds, "traces": res, "seed_verdicts": svs})
}
