package router

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
)

// TestIndexConfigPerKind: Config.Index holds one config per index kind,
// New reports every kind's problems, and each index the router builds
// gets its own kind's config (the predicted side index Approx's, with
// Predict.TTL).
func TestIndexConfigPerKind(t *testing.T) {
	if err := DefaultIndexConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if err := (IndexConfig{}).Validate(); err != nil {
		t.Fatalf("zero: %v", err)
	}
	bad := DefaultConfig()
	bad.Index.Flash.Stride = -1
	bad.Index.Radix.BlocksPerWorker = -1
	bad.Index.Concurrent.QueueSize = -1
	bad.Index.Approx.PruneFraction = 2
	_, err := New(bad, Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err == nil {
		t.Fatal("New accepted negative index fields")
	}
	for _, w := range []string{"flash stride", "radix blocks per worker", "concurrent queue size", "approx prune fraction"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("New: %v: does not name %q", err, w)
		}
	}

	cfg := DefaultConfig()
	cfg.Index.Flash.Stride = 5
	cfg.Index.Approx.TTL = 7 * time.Second
	cfg.Predict.TTL = 3 * time.Second
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := r.idx[0].(*indexer.Groups); !ok {
		t.Errorf("device index %T: want *indexer.Groups", r.idx[0])
	} else if f, ok := g.Inner().(*indexer.Flash); !ok || f.Stride() != 5 {
		t.Errorf("device index %T: want *indexer.Flash with stride 5", r.idx[0])
	}
	if got := r.predict.TTL(); got != 3*time.Second {
		t.Errorf("predicted side index TTL %v, want Predict.TTL 3s", got)
	}
	cfg.Policy = PolicyApprox
	r, err = New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := r.approx.(*indexer.Approx); !ok || a.TTL() != 7*time.Second {
		t.Errorf("approx index %T: want *indexer.Approx with Index.Approx.TTL 7s", r.approx)
	}
}
