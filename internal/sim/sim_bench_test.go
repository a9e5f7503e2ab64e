package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/trace"
)

// conversationTrace loads the Mooncake conversation trace from
// ../shared/data (relative to the module root), or skips.
func conversationTrace(tb testing.TB) []trace.Record {
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skip("module root not found")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "data", "conversation_trace.jsonl.gz")
	recs, err := trace.ReadFile(p)
	if err != nil {
		tb.Skipf("conversation trace not available: %v", err)
	}
	return recs
}

// BenchmarkSim simulates the first 2,000 requests of the conversation trace
// on 8 workers, once per policy (go test -bench Sim -cpuprofile cpu.out).
func BenchmarkSim(b *testing.B) {
	recs := conversationTrace(b)
	for _, pol := range AllPolicies {
		b.Run("policy="+string(pol), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Trace = recs
			cfg.Limit = 2000
			cfg.RateScale = 4
			cfg.Policies = []Policy{pol}
			b.ReportAllocs()
			var simulated time.Duration
			for range b.N {
				rep, err := Run(context.Background(), cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				simulated = time.Duration(rep.Policies[0].MakespanS * float64(time.Second))
			}
			b.ReportMetric(simulated.Seconds()*float64(b.N)/b.Elapsed().Seconds(), "sim-s/s")
		})
	}
}

// BenchmarkBounds measures the two bounds on the whole trace.
func BenchmarkBounds(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Trace = conversationTrace(b)
	p := prepare(&cfg)
	b.ResetTimer()
	for range b.N {
		computeBounds(&p, cfg.BlockSize, cfg.Workers*cfg.Engine.NumBlocks)
	}
}
