package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvrouter/kvrouter/internal/cli"
	"github.com/kvrouter/kvrouter/internal/sim"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// simTraceResult is one trace's part of `sim --json`.
type simTraceResult struct {
	Trace     string        `json:"trace"`
	Capacity  *sim.Capacity `json:"capacity,omitempty"`
	Fractions []float64     `json:"fractions,omitempty"`
	Reports   []sim.Report  `json:"reports"`
	Verdicts  []sim.Verdict `json:"verdicts,omitempty"`
}

// runSimTrace runs one trace: at its own rate, or at each fraction of its
// measured capacity, printing human text to text.
func runSimTrace(cmd *cobra.Command, cfg sim.Config, label string, fractions []float64, findCap bool,
	capPolicy string, capScale float64, quiet bool, text io.Writer, full bool) (simTraceResult, error) {
	res := simTraceResult{Trace: label, Fractions: fractions}
	errOut := cmd.ErrOrStderr()
	if !findCap && len(fractions) == 0 {
		rep, err := sim.Run(cmd.Context(), cfg, simProgress(errOut, quiet, label))
		if err != nil {
			return res, err
		}
		fmt.Fprintf(text, "\n== %s at the trace's rate x%g ==\n", label, cfg.RateScale)
		if err := rep.WriteTable(text); err != nil {
			return res, err
		}
		res.Reports = []sim.Report{rep}
		if v, ok := sim.Judge(&rep, sim.PolicyKV, label, 0); ok {
			res.Verdicts = append(res.Verdicts, v)
			fmt.Fprintln(text, "verdict "+v.String())
		}
		return res, nil
	}
	cp, err := sim.ParsePolicies(capPolicy)
	if err != nil || len(cp) != 1 {
		return res, fmt.Errorf("--capacity-policy must name one policy: %q", capPolicy)
	}
	var capy sim.Capacity
	if capScale > 0 {
		capy, err = sim.CapacityFromScale(cfg, capScale)
	} else {
		capCfg := cfg
		capCfg.Policies = cp
		capCfg.KeepRequests = false
		capy, err = sim.FindCapacity(cmd.Context(), capCfg, simProgress(errOut, quiet, label+" capacity"))
	}
	if err != nil {
		return res, err
	}
	res.Capacity = &capy
	fmt.Fprintf(text, "\n== trace %s ==\ncapacity (%s, %d workers): %.3f req/s saturated = %.2fx the trace's %.3f req/s\n",
		label, cp[0], cfg.Workers, capy.RequestsPerS, capy.RateScale, capy.TraceRate)
	for _, fr := range fractions {
		fmt.Fprintf(text, "  %.0f%% load: --rate-scale %.3f (%.3f req/s)\n", 100*fr, fr*capy.RateScale, fr*capy.RequestsPerS)
	}
	for _, fr := range fractions {
		rc := cfg
		rc.RateScale = fr * capy.RateScale
		rep, err := sim.Run(cmd.Context(), rc, simProgress(errOut, quiet, fmt.Sprintf("%s load %.0f%%", label, 100*fr)))
		if err != nil {
			return res, err
		}
		res.Reports = append(res.Reports, rep)
		if full {
			fmt.Fprintf(text, "\n== %s, %.0f%% of capacity ==\n", label, 100*fr)
			if err := rep.WriteTable(text); err != nil {
				return res, err
			}
		}
		if v, ok := sim.Judge(&rep, sim.PolicyKV, label, fr); ok {
			res.Verdicts = append(res.Verdicts, v)
		}
	}
	if len(fractions) > 0 {
		fmt.Fprintln(text)
		if err := sim.WriteSummary(text, label, fractions, res.Reports, sim.PolicyKV); err != nil {
			return res, err
		}
	}
	return res, nil
}

// applySimPreset applies a router preset to the simulated policies.
func applySimPreset(cmd *cobra.Command, cfg *sim.Config, name string) error {
	return applyRouterPreset(cmd, &cfg.Router, name)
}

// applyRouterPreset replaces the router's cost knobs (selector config and
// predicted side index) by the preset's (router.Preset), then re-applies
// every flag given explicitly: flags override the preset. "" is a no-op.
func applyRouterPreset(cmd *cobra.Command, rcfg *router.Config, name string) error {
	if name == "" {
		return nil
	}
	changed := map[string]string{}
	cmd.Flags().Visit(func(f *pflag.Flag) { changed[f.Name] = f.Value.String() })
	if err := cli.PresetRouter(rcfg, name); err != nil {
		return err
	}
	for n, v := range changed {
		if err := cmd.Flags().Set(n, v); err != nil {
			return fmt.Errorf("--%s: %w", n, err)
		}
	}
	return nil
}

func presetName(p string) string {
	if p == "" {
		return selector.PresetDefault
	}
	return p
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
