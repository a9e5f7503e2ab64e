package replay

import (
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The bar charts' legend sits between the title and the data area, so it
// covers no bar: in the data area's top corner it hid the last policy's
// bars whenever they were the tallest (replay --compare's ttft.png).
func TestBarChartLegendAboveBars(t *testing.T) {
	ss := []barSeries{{"p50", plotter.Values{340, 17341, 1043}}, {"p99", plotter.Values{3065, 37207, 10041}}}
	p, err := barChart("TTFT by policy", "ms", []string{"kv", "load", "round-robin"}, ss)
	if err != nil {
		t.Fatal(err)
	}
	c := draw.New(vgimg.New(7*vg.Inch, 4*vg.Inch))
	data := p.DataCanvas(c)
	// plot.Draw gives the legend the canvas below the title and its
	// padding; Legend.Draw stacks the entries down from that canvas's top
	// (less the font's descent), shifted up by YOffs.
	below := c.Max.Y - p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y - p.Title.Padding
	top := below - p.Legend.TextStyle.FontExtents().Descent + p.Legend.YOffs
	bottom := top - p.Legend.Rectangle(c).Size().Y
	if bottom < data.Max.Y {
		t.Errorf("legend reaches down to y=%.1fpt, into the data area (top y=%.1fpt)", bottom, data.Max.Y)
	}
	if title := c.Max.Y - p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y; top > title {
		t.Errorf("legend top y=%.1fpt overlaps the title (bottom y=%.1fpt)", top, title)
	}
	if p.X.Min > -0.5 || p.X.Max < 1.5+1 {
		t.Errorf("x range [%v, %v] cuts the outer bars of slots 0..2", p.X.Min, p.X.Max)
	}
	p.Draw(c)
}
