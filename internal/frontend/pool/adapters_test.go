package pool

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestLearntAdaptersBounded: the adapter names learnt from engines'
// /v1/models are the bounded store "lora_adapters": names beyond
// maxLearntAdapters, or longer than maxAdapterName, are not learnt.
func TestLearntAdaptersBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	p := New(Config{Logger: slog.New(slog.DiscardHandler), Registry: reg, LoRAAdapters: []string{"configured"}}, nil)
	base := "base"
	var models []engineModel
	for i := range maxLearntAdapters + 10 {
		models = append(models, engineModel{ID: "lora-" + strconv.Itoa(i), Parent: &base})
	}
	long := strings.Repeat("l", maxAdapterName+1)
	added := p.adapters.learn(append([]engineModel{{ID: long, Parent: &base}}, models...))
	if len(added) != maxLearntAdapters || p.LoRA(long) != "" || p.LoRA("configured") != "configured" {
		t.Fatalf("learnt %d names (want %d), the long one: %q", len(added), maxLearntAdapters, p.LoRA(long))
	}
	if !p.adapters.warnOnce() || p.adapters.warnOnce() {
		t.Errorf("the refusal is not reported exactly once")
	}
	n, b := p.adapters.learnt.Size()
	maxN, maxB := p.adapters.learnt.Limits()
	if n != maxLearntAdapters || maxN != maxLearntAdapters || b > maxB {
		t.Errorf("lora_adapters: %d entries, %d bytes; limits %d, %d", n, b, maxN, maxB)
	}
	// The store is on the pool's registry, as kvrouter_store_*{store="lora_adapters"}.
	if c, err := testutil.GatherAndCount(reg, "kvrouter_store_entries"); err != nil || c != 1 {
		t.Errorf("kvrouter_store_entries series on the registry: %d, %v", c, err)
	}
}
