package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Compare is `replay --compare`: a fresh in-process fleet per arm (a
// routing policy, timing fit on or off), the same trace replayed against
// each, back to back, then the reports side by side. The command binds
// its flags into a Compare and calls Run; the tests build Compares
// directly. A Compare is not safe for concurrent use.
type Compare struct {
	// Replay is the replay to run against each fleet; URL is filled in.
	Replay Config
	// TraceName names the trace in the header line Run prints.
	TraceName string
	// Policies to compare, in order (router.ParsePolicy names). Default
	// kv, load, round-robin.
	Policies []router.Policy
	// Arms, when set, replaces Policies: each a policy with the timing
	// fit on or off (ParseArms). Default nil = Policies, fit on.
	Arms []Arm
	// Workers per fleet. Default 4.
	Workers int
	// Engine is each worker's engine. Default mocker.DefaultConfig().
	Engine mocker.Config
	// SpeedupRatios, when set, gives worker i+1 the speedup ratio
	// SpeedupRatios[i] instead of Engine.SpeedupRatio
	// (fleet.Config.SpeedupRatios; its length must equal Workers, or sets
	// it when Workers is 0). Default nil = every worker the same.
	SpeedupRatios []float64
	// Direct skips NATS (events straight into the router). Default false.
	Direct bool
	// Seed seeds every fleet's router identically. Default 1.
	Seed uint64
	// Preset, when set, gives every fleet's router that preset's cost
	// knobs (router.Preset). Default "" = the frontend's defaults.
	Preset string
	// OverlapCredit and PrefillLoadScale, when set, override every
	// fleet's router knob of that name, after Preset. Default nil.
	OverlapCredit, PrefillLoadScale *float64
	// Frontend, when set, adjusts each fleet's frontend config (cost knobs,
	// thresholds) after the policy, seed and knobs above are set.
	Frontend func(*frontend.Config)
	// Logger for the fleets; default discards.
	Logger *slog.Logger
	// Output is how Run shows the reports.
	Output Output
}

// Output shows replay reports: a table (or, with JSON, the JSON alone) on
// stdout and, with Charts, PNG charts in that directory.
type Output struct {
	// JSON prints the reports as JSON instead of the table.
	JSON bool
	// Charts, when set, is the directory the charts go to (WriteCharts).
	Charts string
}

// Write shows reps on stdout, naming every chart written on stderr.
func (o Output) Write(stdout, stderr io.Writer, reps []Report) error {
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reps); err != nil {
			return err
		}
	} else if err := WriteTable(stdout, reps); err != nil {
		return err
	}
	if o.Charts == "" {
		return nil
	}
	if err := os.MkdirAll(o.Charts, 0o755); err != nil {
		return err
	}
	paths, err := WriteCharts(o.Charts, reps)
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Fprintln(stderr, "wrote", p)
	}
	return nil
}

// Run compares the arms: a header line and, without Output.JSON, each
// arm's one-line report on stderr as it finishes, then Output's table or
// JSON and charts. It returns ctx's error when ctx ends the run.
func (c *Compare) Run(ctx context.Context, stdout, stderr io.Writer) error {
	if c.Preset != "" {
		if _, err := router.Preset(c.Preset); err != nil {
			return err
		}
	}
	var names []string
	for _, a := range c.arms() {
		names = append(names, a.Name)
	}
	speeds := fmt.Sprint(c.Engine.SpeedupRatio)
	if len(c.SpeedupRatios) > 0 {
		speeds = fmt.Sprint(c.SpeedupRatios)
	}
	fmt.Fprintf(stderr, "comparing %v: %d requests of %s, %s, %d workers (speedup %s, %d blocks each)\n",
		names, min(c.Replay.Limit, len(c.Replay.Records)), c.TraceName, c.Replay.Pacer, c.Workers, speeds, c.Engine.NumBlocks)
	reps, err := c.reports(ctx, func(r Report) {
		if !c.Output.JSON {
			fmt.Fprintln(stderr, r.String())
		}
	})
	if err != nil {
		return err
	}
	if err := c.Output.Write(stdout, stderr, reps); err != nil {
		return err
	}
	return ctx.Err()
}

// reports runs every arm in turn, calling done after each.
func (c *Compare) reports(ctx context.Context, done func(Report)) ([]Report, error) {
	cfg := *c
	if len(cfg.Policies) == 0 {
		cfg.Policies = []router.Policy{router.PolicyKV, router.PolicyLoad, router.PolicyRoundRobin}
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var out []Report
	for _, a := range cfg.arms() {
		rep, err := compareOne(ctx, &cfg, a)
		if err != nil {
			return out, fmt.Errorf("replay: policy %s: %w", a.Name, err)
		}
		out = append(out, rep)
		if done != nil {
			done(rep)
		}
	}
	return out, nil
}

func compareOne(ctx context.Context, cfg *Compare, a Arm) (Report, error) {
	f, err := fleet.New(cfg.fleetConfig(a))
	if err != nil {
		return Report{}, err
	}
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- f.Run(fctx) }()
	select {
	case <-f.Ready():
	case err := <-done:
		return Report{}, fmt.Errorf("fleet stopped: %w", err)
	case <-time.After(60 * time.Second):
		stop()
		<-done
		return Report{}, fmt.Errorf("fleet not ready after 60s")
	}
	rc := cfg.Replay
	rc.URL = f.URL()
	rc.Label = a.Name
	rep, err := Run(ctx, rc)
	stop()
	if ferr := <-done; ferr != nil && err == nil {
		err = ferr
	}
	return rep, err
}

// WriteTable prints reports side by side, with ratios to the first one.
func WriteTable(w io.Writer, reps []Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tok\terr\tttft p50\tttft p90\tttft p99\titl p50\titl p99\te2e p50\te2e p99\treq/s\tout tok/s\trouter hit\tworker hit\t")
	for _, r := range reps {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0fms\t%.0fms\t%.0fms\t%.1fms\t%.1fms\t%.0fms\t%.0fms\t%.2f\t%.0f\t%s\t%.1f%%\t\n",
			r.Label, r.OK, r.Errors, r.TTFT.P50, r.TTFT.P90, r.TTFT.P99, r.ITL.P50, r.ITL.P99, r.E2E.P50, r.E2E.P99,
			r.RequestsPerSec, r.OutputTokensPerSec, pct(r.RouterHitRate), 100*r.WorkerHitRate)
	}
	if len(reps) > 1 {
		b := reps[0]
		fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t\t\t\t\t\t")
		for _, r := range reps[1:] {
			fmt.Fprintf(tw, "%s / %s\t\t\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t\t\n", r.Label, b.Label,
				ratio(r.TTFT.P50, b.TTFT.P50), ratio(r.TTFT.P90, b.TTFT.P90), ratio(r.TTFT.P99, b.TTFT.P99),
				ratio(r.ITL.P50, b.ITL.P50), ratio(r.ITL.P99, b.ITL.P99), ratio(r.E2E.P50, b.E2E.P50),
				ratio(r.E2E.P99, b.E2E.P99), ratio(r.RequestsPerSec, b.RequestsPerSec), ratio(r.OutputTokensPerSec, b.OutputTokensPerSec))
		}
	}
	return tw.Flush()
}

func pct(x float64) string {
	if x < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a/b) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// WriteCharts writes three PNGs into dir: ttft_cdf.png (TTFT CDF per
// policy), ttft.png (TTFT p50/p99 per policy) and hitrate.png (router and
// worker hit rates per policy). It returns the paths written.
func WriteCharts(dir string, reps []Report) ([]string, error) {
	p := plot.New()
	p.Title.Text = "TTFT CDF by routing policy"
	p.X.Label.Text = "time to first token (ms)"
	p.Y.Label.Text = "fraction of requests"
	p.Legend.Top = false
	p.Legend.Left = false
	var lines []any
	for _, r := range reps {
		xs := r.TTFTs()
		if len(xs) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(xs))
		for i, x := range xs {
			pts[i] = plotter.XY{X: ms(x), Y: float64(i+1) / float64(len(xs))}
		}
		lines = append(lines, r.Label, pts)
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return nil, err
	}
	cdf := filepath.Join(dir, "ttft_cdf.png")
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, cdf); err != nil {
		return nil, err
	}

	var names []string
	for _, r := range reps {
		names = append(names, r.Label)
	}
	bars := func(title, ylabel, file string, ss []barSeries) (string, error) {
		b, err := barChart(title, ylabel, names, ss)
		if err != nil {
			return "", err
		}
		path := filepath.Join(dir, file)
		return path, b.Save(7*vg.Inch, 4*vg.Inch, path)
	}
	var p50, p99, rhit, whit plotter.Values
	for _, r := range reps {
		p50 = append(p50, r.TTFT.P50)
		p99 = append(p99, r.TTFT.P99)
		rhit = append(rhit, 100*max(r.RouterHitRate, 0))
		whit = append(whit, 100*r.WorkerHitRate)
	}
	sum, err := bars("TTFT by policy", "ms", "ttft.png", []barSeries{{"p50", p50}, {"p99", p99}})
	if err != nil {
		return nil, err
	}
	hit, err := bars("Prefix cache hit rate by policy", "% of prompt", "hitrate.png",
		[]barSeries{{"router (expected)", rhit}, {"workers (reported)", whit}})
	if err != nil {
		return nil, err
	}
	return []string{cdf, sum, hit}, nil
}

// barSeries is one bar per report, side by side with the other series.
type barSeries struct {
	name string
	vals plotter.Values
}

// barChart groups the series' bars by report name, with the legend above
// the bars.
func barChart(title, ylabel string, names []string, ss []barSeries) (*plot.Plot, error) {
	b := plot.New()
	b.Title.Text = title
	b.Y.Label.Text = ylabel
	w := vg.Points(24)
	for i, v := range ss {
		bc, err := plotter.NewBarChart(v.vals, w)
		if err != nil {
			return nil, err
		}
		bc.Offset = vg.Length(2*i-len(ss)+1) * w / 2
		bc.Color = plotutil.Color(i)
		bc.LineStyle.Width = 0
		b.Add(bc)
		b.Legend.Add(v.name, bc)
	}
	b.NominalX(names...)
	// Half a slot either side, so the outer bars and names are not cut.
	b.X.Min, b.X.Max = -0.5, float64(len(names))-0.5
	legendAbove(b)
	return b, nil
}

// legendAbove moves p's legend out of the data area into a band between
// the title and the plot: in the corner of the data area it covered the
// tallest bar whenever that bar was the last report's.
func legendAbove(p *plot.Plot) {
	h := p.Legend.Rectangle(draw.Canvas{}).Size().Y + p.Legend.TextStyle.FontExtents().Descent
	p.Legend.Top = true
	p.Legend.YOffs = h
	p.Title.Padding += h
}
