package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kvrouter/kvrouter/internal/traces"
	"github.com/kvrouter/kvrouter/selector"
)

// Study is one `kvrouter-study sim` run: every trace at its own rate or at
// fractions of its measured capacity, once or once per seed, with the
// tables, verdicts, JSON, charts and request dump that go with it. The
// command binds its flags into a Study and calls Run; the tests build
// Studies directly. A Study is not safe for concurrent use.
type Study struct {
	// Config is every run's configuration; Trace, Seed and RateScale are
	// set per run. KeepSamples and KeepRequests follow OutDir and
	// DumpPath.
	Config Config
	// Traces names the traces (shipped names or files, traces.Load); one
	// is required.
	Traces []string
	// Loads are fractions of capacity to run (nil: each trace at
	// Config.RateScale). Loads imply FindCapacity.
	Loads []float64
	// FindCapacity measures (or, with CapacityScale, takes) each trace's
	// capacity and prints the rate scales of Loads.
	FindCapacity bool
	// CapacityPolicy is the one policy whose saturated throughput defines
	// capacity (ParsePolicies syntax).
	CapacityPolicy string
	// CapacityScale > 0 is a known capacity as a rate scale (a single
	// trace only): capacity is not measured.
	CapacityScale float64
	// Seeds, when set, runs every cell once per seed (at least two,
	// distinct; needs Loads) and judges the means (JudgeSeeds).
	Seeds []uint64
	// LoadJitter J in [0, 1) runs the i-th of n seeds at (1 + J*d_i)
	// times each load's rate, d_i evenly in [-1, 1].
	LoadJitter float64
	// Full prints every report's full table, not just the summary.
	Full bool
	// JSON puts the JSON alone on stdout (the text goes to stderr).
	JSON bool
	// OutDir, when set, receives sim.csv and, through Charts, the charts
	// (not with Seeds).
	OutDir string
	// Charts, when set, draws a report's charts into dir, each file name
	// ending in suffix (internal/charts.WriteSim: the plotting code stays
	// out of this package and the binaries that do not draw).
	Charts func(rep *Report, dir, suffix string) error
	// DumpPath, when set, receives every completed request as JSON lines
	// (WriteRequests; not with Seeds).
	DumpPath string
	// Preset names the router preset applied to Config (for the JSON
	// output; "" = selector.PresetDefault).
	Preset string
}

// ProgressFunc returns the progress callback of one run described by desc
// (nil = no progress).
type ProgressFunc func(desc string) Progress

// TraceResult is one trace's part of the JSON of a Study without Seeds.
type TraceResult struct {
	Trace     string    `json:"trace"`
	Capacity  *Capacity `json:"capacity,omitempty"`
	Fractions []float64 `json:"fractions,omitempty"`
	Reports   []Report  `json:"reports"`
	Verdicts  []Verdict `json:"verdicts,omitempty"`
}

// SeedsTrace is one trace's part of the JSON of a Study with Seeds.
type SeedsTrace struct {
	Trace    string        `json:"trace"`
	Capacity *Capacity     `json:"capacity,omitempty"`
	Runs     []TraceResult `json:"runs"` // one per seed, in Seeds order
	Verdicts []SeedVerdict `json:"seed_verdicts"`
}

// ParseLoads parses comma-separated positive fractions of capacity.
func ParseLoads(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) {
			return nil, fmt.Errorf("--loads: %q is not a positive fraction", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseSeeds parses a comma-separated list of at least two distinct seeds.
func ParseSeeds(s string) ([]uint64, error) {
	var out []uint64
	seen := map[uint64]bool{}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
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

// Run runs the study, printing the human text to stdout (to stderr with
// JSON, stdout then carrying the JSON alone) and progress through
// progress (nil = none). The same Study always prints the same figures.
func (s *Study) Run(ctx context.Context, stdout, stderr io.Writer, progress ProgressFunc) error {
	if progress == nil {
		progress = func(string) Progress { return nil }
	}
	if len(s.Traces) == 0 {
		return errors.New("--traces: no trace named")
	}
	if s.CapacityScale > 0 && len(s.Traces) > 1 {
		return errors.New("--capacity-rate-scale needs a single trace (--trace)")
	}
	cfg := s.Config
	cfg.KeepSamples = s.OutDir != ""
	cfg.KeepRequests = s.DumpPath != ""
	text := stdout
	if s.JSON {
		text = stderr
	}
	if len(s.Seeds) > 0 {
		return s.runSeeds(ctx, cfg, stdout, text, progress)
	}
	var results []TraceResult
	var verdicts []Verdict
	for _, name := range s.Traces {
		recs, err := traces.Load(name)
		if err != nil {
			return err
		}
		tc := cfg
		tc.Trace = recs
		label := traces.Short(name)
		res, err := s.runTrace(ctx, tc, label, s.FindCapacity, s.CapacityScale, text, s.Full, progress)
		if err != nil {
			return fmt.Errorf("trace %s: %w", label, err)
		}
		results = append(results, res)
		verdicts = append(verdicts, res.Verdicts...)
		dir := s.OutDir
		if dir != "" && len(s.Traces) > 1 {
			dir = filepath.Join(s.OutDir, label)
		}
		if err := writeOut(dir, res.Reports, s.Loads, s.Charts); err != nil {
			return err
		}
		if err := dumpRequests(s.DumpPath, label, s.Loads, res.Reports, len(results) > 1); err != nil {
			return err
		}
	}
	if len(verdicts) > 1 {
		fmt.Fprintln(text)
		WriteVerdicts(text, verdicts)
	}
	if !s.JSON {
		return nil
	}
	if len(s.Traces) == 1 && len(s.Loads) == 0 && !s.FindCapacity {
		if len(results[0].Reports) == 0 {
			return nil
		}
		return results[0].Reports[0].WriteJSON(stdout)
	}
	return writeJSON(stdout, map[string]any{"preset": s.presetName(), "traces": results, "verdicts": verdicts})
}

// runTrace runs one trace: at its own rate, or at each fraction of its
// capacity (measured, or capScale when > 0), printing text.
func (s *Study) runTrace(ctx context.Context, cfg Config, label string, findCap bool, capScale float64,
	text io.Writer, full bool, progress ProgressFunc) (TraceResult, error) {
	fractions := s.Loads
	res := TraceResult{Trace: label, Fractions: fractions}
	if !findCap && len(fractions) == 0 {
		rep, err := Run(ctx, cfg, progress(label))
		if err != nil {
			return res, err
		}
		fmt.Fprintf(text, "\n== %s at the trace's rate x%g ==\n", label, cfg.RateScale)
		if err := rep.WriteTable(text); err != nil {
			return res, err
		}
		res.Reports = []Report{rep}
		if v, ok := Judge(&rep, PolicyKV, label, 0); ok {
			res.Verdicts = append(res.Verdicts, v)
			fmt.Fprintln(text, "verdict "+v.String())
		}
		return res, nil
	}
	cp, err := s.capacityPolicy()
	if err != nil {
		return res, err
	}
	var capy Capacity
	if capScale > 0 {
		capy, err = CapacityFromScale(cfg, capScale)
	} else {
		capCfg := cfg
		capCfg.Policies = []Policy{cp}
		capCfg.KeepRequests = false
		capy, err = FindCapacity(ctx, capCfg, progress(label+" capacity"))
	}
	if err != nil {
		return res, err
	}
	res.Capacity = &capy
	fmt.Fprintf(text, "\n== trace %s ==\ncapacity (%s, %d workers): %.3f req/s saturated = %.2fx the trace's %.3f req/s\n",
		label, cp, cfg.Workers, capy.RequestsPerS, capy.RateScale, capy.TraceRate)
	for _, fr := range fractions {
		fmt.Fprintf(text, "  %.0f%% load: --rate-scale %.3f (%.3f req/s)\n", 100*fr, fr*capy.RateScale, fr*capy.RequestsPerS)
	}
	for _, fr := range fractions {
		rc := cfg
		rc.RateScale = fr * capy.RateScale
		rep, err := Run(ctx, rc, progress(fmt.Sprintf("%s load %.0f%%", label, 100*fr)))
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
		if v, ok := Judge(&rep, PolicyKV, label, fr); ok {
			res.Verdicts = append(res.Verdicts, v)
		}
	}
	if len(fractions) > 0 {
		fmt.Fprintln(text)
		if err := WriteSummary(text, label, fractions, res.Reports, PolicyKV); err != nil {
			return res, err
		}
	}
	return res, nil
}

// capacityPolicy parses CapacityPolicy, which must name one policy.
func (s *Study) capacityPolicy() (Policy, error) {
	cp, err := ParsePolicies(s.CapacityPolicy)
	if err != nil || len(cp) != 1 {
		return "", fmt.Errorf("--capacity-policy must name one policy: %q", s.CapacityPolicy)
	}
	return cp[0], nil
}

// runSeeds runs every trace at every load once per seed. The capacity is
// measured once per trace, at the first seed (the capacity policy should
// not depend on the seed: keep round-robin). With jitter J > 0 the i-th
// of n seeds runs every load at (1 + J*d_i) times its rate, d_i spread
// evenly over [-1, 1]: the seed alone moves only the policies' random
// draws, which the time cost's deterministic tie-break leaves to an idle
// fleet's first decisions, so a small change of the arrival rate is what
// shows how much a cell's figures move by chance. Each run is the one
// `--seed N --capacity-rate-scale S` gives alone (S printed); text gets
// the capacity, the mean and range of every figure and each cell's seed
// verdict with the strict verdict of every seed.
func (s *Study) runSeeds(ctx context.Context, cfg Config, stdout, text io.Writer, progress ProgressFunc) error {
	switch {
	case s.DumpPath != "":
		return errors.New("--dump-requests does not go with --seeds")
	case len(s.Seeds) < 2:
		return errors.New("--seeds needs at least two seeds (use --seed for one)")
	case len(s.Loads) == 0:
		return errors.New("--seeds needs --loads")
	case s.OutDir != "":
		return errors.New("--seeds does not write --out")
	case !(s.LoadJitter >= 0 && s.LoadJitter < 1):
		return fmt.Errorf("--load-jitter %v must be in [0, 1)", s.LoadJitter)
	}
	seeds := s.Seeds
	var out []SeedsTrace
	var all []SeedVerdict
	for _, name := range s.Traces {
		recs, err := traces.Load(name)
		if err != nil {
			return err
		}
		label := traces.Short(name)
		st := SeedsTrace{Trace: label}
		tc := cfg
		tc.Trace = recs
		tc.Seed = seeds[0]
		var capy Capacity
		if s.CapacityScale > 0 {
			capy, err = CapacityFromScale(tc, s.CapacityScale)
		} else {
			cp, perr := s.capacityPolicy()
			if perr != nil {
				return perr
			}
			capCfg := tc
			capCfg.Policies = []Policy{cp}
			capy, err = FindCapacity(ctx, capCfg, progress(label+" capacity"))
		}
		if err != nil {
			return fmt.Errorf("trace %s: %w", label, err)
		}
		st.Capacity = &capy
		fmt.Fprintf(text, "\n== trace %s ==\ncapacity (%s, %d workers, seed %d): %.3f req/s saturated = %.2fx the trace's %.3f req/s\n",
			label, s.CapacityPolicy, cfg.Workers, seeds[0], capy.RequestsPerS, capy.RateScale, capy.TraceRate)
		for i, seed := range seeds {
			tc.Seed = seed
			scale := capy.RateScale * (1 + s.LoadJitter*jitterOffset(i, len(seeds)))
			if s.LoadJitter > 0 {
				fmt.Fprintf(text, "  seed %d: --capacity-rate-scale %g\n", seed, scale)
			}
			res, err := s.runTrace(ctx, tc, label, true, scale, io.Discard, false, progress)
			if err != nil {
				return fmt.Errorf("trace %s seed %d: %w", label, seed, err)
			}
			st.Runs = append(st.Runs, res)
		}
		for j, fr := range s.Loads {
			reps := make([]Report, len(seeds))
			for i := range seeds {
				reps[i] = st.Runs[i].Reports[j]
			}
			if sv, ok := JudgeSeeds(reps, seeds, PolicyKV, label, fr); ok {
				st.Verdicts = append(st.Verdicts, sv)
			}
		}
		fmt.Fprintln(text)
		if err := WriteSeedSummary(text, label, st.Verdicts); err != nil {
			return err
		}
		out = append(out, st)
		all = append(all, st.Verdicts...)
	}
	fmt.Fprintln(text)
	WriteSeedVerdicts(text, all)
	if !s.JSON {
		return nil
	}
	return writeJSON(stdout, map[string]any{"preset": s.presetName(), "seeds": seeds, "load_jitter": s.LoadJitter, "traces": out, "seed_verdicts": all})
}

// jitterOffset is d_i of runSeeds: i of n spread evenly over [-1, 1].
func jitterOffset(i, n int) float64 {
	if n < 2 {
		return 0
	}
	return 2*float64(i)/float64(n-1) - 1
}

func (s *Study) presetName() string {
	if s.Preset == "" {
		return selector.PresetDefault
	}
	return s.Preset
}

// writeJSON prints v as indented JSON, as every --json output does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeOut writes the CSV and, with charts, the charts of reps into dir
// ("" = nowhere).
func writeOut(dir string, reps []Report, fractions []float64, charts func(*Report, string, string) error) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "sim.csv"))
	if err != nil {
		return err
	}
	for i := range reps {
		if err := reps[i].WriteCSV(f, i == 0); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	for i := range reps {
		suffix := ""
		if len(fractions) > 0 {
			suffix = fmt.Sprintf("-load%.0f", 100*fractions[i])
		}
		if charts == nil {
			break
		}
		if err := charts(&reps[i], dir, suffix); err != nil {
			return err
		}
	}
	return nil
}

// dumpRequests appends every report's request rows to path ("" =
// nowhere), each labelled with the trace, load fraction and seed; the
// first trace creates the file.
func dumpRequests(path, label string, fractions []float64, reps []Report, appendTo bool) error {
	if path == "" {
		return nil
	}
	flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendTo {
		flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return err
	}
	for i := range reps {
		run := map[string]any{"trace": label, "rate_scale": reps[i].RateScale, "seed": reps[i].Seed}
		if i < len(fractions) {
			run["load"] = fractions[i]
		}
		for k := range reps[i].Policies {
			if err := WriteRequests(f, run, reps[i].Policies[k].RequestRows); err != nil {
				f.Close()
				return err
			}
		}
	}
	return f.Close()
}
