package benchindex

import (
	"context"
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// SweepOptions shape a sweep: windows shrink by Factor from First (so the
// offered rate grows by Factor) until the index stops tracking the offered
// rate for StopAfter consecutive steps, or the window falls under Min.
type SweepOptions struct {
	First     time.Duration
	Min       time.Duration // default 1 ms
	Factor    float64       // default 2
	StopAfter int           // default 2
	MaxSteps  int           // default 16
	Replay    ReplayOptions // Window is set per step
	// OnStep, when set, is called after each step.
	OnStep func(Result)
}

func (o *SweepOptions) defaults() {
	if o.Min <= 0 {
		o.Min = time.Millisecond
	}
	if o.Factor <= 1 {
		o.Factor = 2
	}
	if o.StopAfter <= 0 {
		o.StopAfter = 2
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = 16
	}
}

// Windows returns the paced windows a sweep would try, longest first, not
// counting early stops nor the final unpaced step.
func (o SweepOptions) Windows() []time.Duration {
	o.defaults()
	var ws []time.Duration
	for w := o.First; w >= o.Min && len(ws) < o.MaxSteps; w = time.Duration(float64(w) / o.Factor) {
		ws = append(ws, w)
	}
	return ws
}

// Sweep replays tl against fresh targets at increasing offered rates and
// returns every step's result, in order. It stops after StopAfter
// consecutive steps that either do not track the offered rate or are
// invalid: past that point the index is saturated. A last, unpaced step
// (Window 0: every entry due at once) then measures the capacity the
// paced steps only approach (a paced step's wall time is its window plus
// the backlog of the trace's bursts).
func Sweep(ctx context.Context, tl *Timeline, f TargetFactory, opt SweepOptions) ([]Result, error) {
	opt.defaults()
	var out []Result
	bad := 0
	for _, w := range opt.Windows() {
		ro := opt.Replay
		ro.Window = w
		s, err := Replay(ctx, tl, f, ro)
		if err != nil {
			return out, err
		}
		r := NewResult(f.Name, tl, s)
		out = append(out, r)
		if opt.OnStep != nil {
			opt.OnStep(r)
		}
		if bad = nextBad(bad, r); bad >= opt.StopAfter {
			break
		}
	}
	ro := opt.Replay
	ro.Window = 0
	s, err := Replay(ctx, tl, f, ro)
	if err != nil {
		return out, err
	}
	r := NewResult(f.Name, tl, s)
	out = append(out, r)
	if opt.OnStep != nil {
		opt.OnStep(r)
	}
	return out, nil
}

// Sustained returns the paced step with the highest offered rate that
// sustains it (Result.Sustains: issued within 1.01x the window, complete
// within 1.10x, valid), and false when no step did.
func Sustained(rs []Result) (Result, bool) {
	var best Result
	ok := false
	for _, r := range rs {
		if r.Sustains() && r.OfferedBlockOpsPerSec > best.OfferedBlockOpsPerSec {
			best, ok = r, true
		}
	}
	return best, ok
}

// nextBad counts consecutive saturated steps: a step that tracks the
// offered rate and is valid resets the count.
func nextBad(bad int, r Result) int {
	if r.Tracking && r.Valid {
		return 0
	}
	return bad + 1
}

// Best returns the valid result with the highest achieved block ops/s, and
// false when none is valid (then it returns the highest overall).
func Best(rs []Result) (Result, bool) {
	var best Result
	found, any := false, false
	for _, r := range rs {
		switch {
		case r.Valid && (!found || r.BlockOpsPerSec > best.BlockOpsPerSec):
			best, found, any = r, true, true
		case !found && (!any || r.BlockOpsPerSec > best.BlockOpsPerSec):
			best, any = r, true
		}
	}
	return best, found
}

// csvHeader is the column order of WriteCSV.
var csvHeader = []string{"index", "window_ms", "wall_ms", "offered_ops_per_sec", "ops_per_sec",
	"offered_block_ops_per_sec", "block_ops_per_sec", "lookup_p50_us", "lookup_p99_us", "lookup_p999_us",
	"events_queued_frac", "tracking", "valid"}

// WriteCSV writes sweep results, one row per step, indexes in the order given.
func WriteCSV(w io.Writer, names []string, sweep map[string][]Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, n := range names {
		for _, r := range sweep[n] {
			rec := []string{r.Index, f(r.WindowMS), f(r.WallMS), f(r.OfferedOpsPerSec), f(r.OpsPerSec),
				f(r.OfferedBlockOpsPerSec), f(r.BlockOpsPerSec), f(r.LookupP50us), f(r.LookupP99us), f(r.LookupP999us),
				f(r.QueuedFrac), strconv.FormatBool(r.Tracking), strconv.FormatBool(r.Valid)}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteChart draws achieved vs offered block ops/s on log-log axes, one line
// per index plus the identity (achieved = offered), as a PNG at path.
func WriteChart(path, title string, names []string, sweep map[string][]Result) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "offered block ops/s"
	p.Y.Label.Text = "achieved block ops/s"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, n := range names {
		var xys plotter.XYs
		for _, r := range sweep[n] {
			if r.OfferedBlockOpsPerSec <= 0 || r.BlockOpsPerSec <= 0 {
				continue
			}
			xys = append(xys, plotter.XY{X: r.OfferedBlockOpsPerSec, Y: r.BlockOpsPerSec})
			lo = min(lo, r.OfferedBlockOpsPerSec, r.BlockOpsPerSec)
			hi = max(hi, r.OfferedBlockOpsPerSec, r.BlockOpsPerSec)
		}
		if len(xys) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("benchindex: chart %s: %w", n, err)
		}
		l.Color = plotutil.Color(i)
		s.Color = plotutil.Color(i)
		s.Shape = plotutil.Shape(i)
		p.Add(l, s)
		p.Legend.Add(n, l, s)
	}
	if lo > hi {
		return fmt.Errorf("benchindex: chart: no paced results to draw")
	}
	lo, hi = lo/1.5, hi*1.5
	id, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return err
	}
	id.Color = color.Gray{Y: 150}
	id.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(id)
	p.Legend.Add("achieved = offered", id)
	p.Legend.Top, p.Legend.Left = true, true
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return p.Save(7*vg.Inch, 5*vg.Inch, path)
}
