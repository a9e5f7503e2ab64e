package indexer_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
)

// validateCase is one config of one index kind and the problems its
// Validate must name (none: valid).
type validateCase struct {
	name string
	err  error
	want []string
}

func checkValidate(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, c := range cases {
		if len(c.want) == 0 {
			if c.err != nil {
				t.Errorf("%s: %v, want valid", c.name, c.err)
			}
			continue
		}
		if c.err == nil {
			t.Errorf("%s: valid, want errors naming %q", c.name, c.want)
			continue
		}
		msg := c.err.Error()
		if n := strings.Count(msg, "\n") + 1; n != len(c.want) {
			t.Errorf("%s: %d errors, want %d: %v", c.name, n, len(c.want), msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q does not name %q", c.name, msg, w)
			}
		}
	}
}

// TestConfigValidate: each index kind's config accepts its zero value and
// its defaults, and reports every out-of-range field, joined.
func TestConfigValidate(t *testing.T) {
	checkValidate(t, []validateCase{
		{"flash zero", indexer.FlashConfig{}.Validate(), nil},
		{"flash default", indexer.DefaultFlashConfig().Validate(), nil},
		{"flash negative", indexer.FlashConfig{Stride: -1, BlocksPerWorker: -2}.Validate(),
			[]string{"flash stride -1", "flash blocks per worker -2"}},
		{"radix zero", indexer.RadixConfig{}.Validate(), nil},
		{"radix default", indexer.DefaultRadixConfig().Validate(), nil},
		{"radix negative", indexer.RadixConfig{BlocksPerWorker: -3}.Validate(),
			[]string{"radix blocks per worker -3"}},
		{"concurrent zero", indexer.ConcurrentConfig{}.Validate(), nil},
		{"concurrent default", indexer.DefaultConcurrentConfig().Validate(), nil},
		{"concurrent negative", indexer.ConcurrentConfig{Writers: -1, QueueSize: -5}.Validate(),
			[]string{"concurrent writers -1", "concurrent queue size -5"}},
		{"approx zero", indexer.ApproxConfig{}.Validate(), nil},
		{"approx default", indexer.DefaultApproxConfig().Validate(), nil},
		{"approx negative", indexer.ApproxConfig{TTL: -time.Second, MaxBlocks: -1, PruneFraction: -0.5}.Validate(),
			[]string{"approx ttl -1s", "approx max blocks -1", "approx prune fraction -0.5"}},
		{"approx prune 1", indexer.ApproxConfig{PruneFraction: 1}.Validate(),
			[]string{"approx prune fraction 1 not in [0, 1)"}},
	})
}

// TestConfigDefaults: the defaults are DESIGN.md §3's, and a zero config
// builds the same index as the defaults.
func TestConfigDefaults(t *testing.T) {
	if got := indexer.DefaultFlashConfig(); got != (indexer.FlashConfig{Stride: 64}) {
		t.Errorf("DefaultFlashConfig = %+v", got)
	}
	if got := indexer.DefaultRadixConfig(); got != (indexer.RadixConfig{}) {
		t.Errorf("DefaultRadixConfig = %+v", got)
	}
	if got := indexer.DefaultConcurrentConfig(); got.Writers != runtime.GOMAXPROCS(0) || got.QueueSize != 1024 ||
		got.Events.OnApplied != nil || got.Events.OnRejected != nil {
		t.Errorf("DefaultConcurrentConfig = %+v", got)
	}
	if got := indexer.DefaultApproxConfig(); got != (indexer.ApproxConfig{TTL: 120 * time.Second, MaxBlocks: 1 << 20, PruneFraction: 0.8}) {
		t.Errorf("DefaultApproxConfig = %+v", got)
	}

	if s := indexer.NewFlash(indexer.FlashConfig{}).Stride(); s != 64 {
		t.Errorf("zero FlashConfig: stride %d, want 64", s)
	}
	if s := indexer.NewFlash(indexer.FlashConfig{Stride: 7}).Stride(); s != 7 {
		t.Errorf("FlashConfig{Stride: 7}: stride %d", s)
	}
	if ttl := indexer.NewApprox(indexer.ApproxConfig{}).TTL(); ttl != 120*time.Second {
		t.Errorf("zero ApproxConfig: TTL %v, want 2m0s", ttl)
	}
	if ttl := indexer.NewApprox(indexer.ApproxConfig{TTL: time.Second}).TTL(); ttl != time.Second {
		t.Errorf("ApproxConfig{TTL: 1s}: TTL %v", ttl)
	}
	if w := indexer.NewConcurrent(indexer.NewRadix(indexer.RadixConfig{}), indexer.ConcurrentConfig{}).Writers(); w != runtime.GOMAXPROCS(0) {
		t.Errorf("zero ConcurrentConfig: %d writers, want GOMAXPROCS %d", w, runtime.GOMAXPROCS(0))
	}
	c := indexer.NewConcurrent(indexer.NewRadix(indexer.RadixConfig{}), indexer.ConcurrentConfig{Writers: 3})
	if w := c.Writers(); w != 3 {
		t.Errorf("ConcurrentConfig{Writers: 3}: %d writers", w)
	}
}
