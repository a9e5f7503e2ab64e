package charts

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/kvrouter/kvrouter/internal/sim"
)

// WriteSim writes two PNG charts of the sim run r into dir:
// ttft-cdf<suffix>.png (the TTFT CDF of every policy, log-scaled time
// axis; needs sim.Config.KeepSamples) and hitrate<suffix>.png (block hit
// rate per policy, with the two bounds as reference lines).
func WriteSim(r *sim.Report, dir, suffix string) error {
	if err := writeTTFTCDF(r, filepath.Join(dir, "ttft-cdf"+suffix+".png")); err != nil {
		return err
	}
	return writeHitRate(r, filepath.Join(dir, "hitrate"+suffix+".png"))
}

func writeTTFTCDF(r *sim.Report, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("TTFT CDF (%d workers, rate x%.3g)", r.Workers, r.RateScale)
	p.X.Label.Text = "TTFT (ms, log scale)"
	p.Y.Label.Text = "fraction of requests"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	for i, pr := range r.Policies {
		s := slices.Clone(pr.TTFTSamples)
		if len(s) == 0 {
			continue
		}
		slices.Sort(s)
		// At most ~500 points per curve keeps the PNG light.
		step := max(1, len(s)/500)
		pts := make(plotter.XYs, 0, len(s)/step+2)
		for k := 0; k < len(s); k += step {
			pts = append(pts, plotter.XY{X: math.Max(s[k], 0.1), Y: float64(k+1) / float64(len(s))})
		}
		pts = append(pts, plotter.XY{X: math.Max(s[len(s)-1], 0.1), Y: 1})
		l, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("charts: ttft chart: %w", err)
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(string(pr.Policy), l)
	}
	return save(p, path)
}

func writeHitRate(r *sim.Report, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Block hit rate per policy (%d workers, rate x%.3g)", r.Workers, r.RateScale)
	p.Y.Label.Text = "block hit rate (%)"
	vals := make(plotter.Values, len(r.Policies))
	names := make([]string, len(r.Policies))
	for i, pr := range r.Policies {
		vals[i] = 100 * pr.HitRate
		names[i] = string(pr.Policy)
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return fmt.Errorf("charts: hit-rate chart: %w", err)
	}
	bars.Color = plotutil.Color(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(names...)
	n := float64(len(r.Policies))
	for k, b := range []struct {
		name string
		v    float64
		c    color.Color
	}{
		{"infinite cache", 100 * r.Bounds.InfiniteHitRate, plotutil.Color(1)},
		{"pooled LRU", 100 * r.Bounds.PooledHitRate, plotutil.Color(2)},
	} {
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: b.v}, {X: n - 0.5, Y: b.v}})
		if err != nil {
			return fmt.Errorf("charts: hit-rate chart: %w", err)
		}
		l.Color = b.c
		l.Dashes = plotutil.Dashes(k + 1)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(b.name, l)
	}
	p.Y.Min = 0
	p.Y.Max = math.Max(100*r.Bounds.InfiniteHitRate, 1) * 1.15
	p.Legend.Top = true
	return save(p, path)
}

func save(p *plot.Plot, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("charts: save %s: %w", path, err)
	}
	return nil
}
