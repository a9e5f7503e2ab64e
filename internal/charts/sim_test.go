package charts

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvrouter/kvrouter/internal/sim"
)

// TestWriteSim: both charts of a two-policy report are written as PNG
// files under the suffix, in a directory that did not exist.
func TestWriteSim(t *testing.T) {
	r := &sim.Report{Workers: 2, RateScale: 1,
		Bounds: sim.Bounds{InfiniteHitRate: 0.6, PooledHitRate: 0.5},
		Policies: []sim.PolicyReport{
			{Policy: "kv", HitRate: 0.45, TTFTSamples: []float64{3, 1, 2, 40}},
			{Policy: "round-robin", HitRate: 0.2, TTFTSamples: []float64{5, 80, 0}},
		}}
	dir := filepath.Join(t.TempDir(), "out")
	if err := WriteSim(r, dir, "-x"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ttft-cdf-x.png", "hitrate-x.png"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("%s is not a PNG (%d bytes)", name, len(b))
		}
	}
}
