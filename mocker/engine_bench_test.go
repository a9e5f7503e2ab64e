package mocker

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvrouter/kvrouter/trace"
)

// conversationTrace returns the path of the Mooncake conversation trace
// (../shared/data relative to the module root), or skips.
func conversationTrace(tb testing.TB) string {
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
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("conversation trace not available at %s: %v", p, err)
	}
	return p
}

// simulate runs recs through e as a discrete-event simulation: arrivals at
// their timestamps, each pass starting when the previous one ends. It
// returns the number of passes and output tokens.
func simulate(tb testing.TB, e *Engine, recs []trace.Record, idBase uint64) (passes, outputs int) {
	i := 0
	var now = e.Now()
	for i < len(recs) || e.Busy() {
		for i < len(recs) && recs[i].Timestamp <= now {
			r := &recs[i]
			req := Request{
				ID:              idBase + uint64(i),
				Tokens:          trace.Tokens(nil, r, trace.TraceBlockTokens),
				MaxOutputTokens: max(1, r.OutputLength),
				Arrival:         r.Timestamp,
			}
			if err := e.Add(req); err != nil {
				tb.Fatal(err)
			}
			i++
		}
		if !e.Busy() {
			now = recs[i].Timestamp
			continue
		}
		res := e.Step(now)
		passes++
		outputs += len(res.Outputs)
		now = res.End()
	}
	return passes, outputs
}

// BenchmarkEngineTrace runs the whole conversation trace (12,031 requests)
// split over 8 engines with the default config, one engine after the other
// on one goroutine: the mocker share of a fleet simulation.
func BenchmarkEngineTrace(b *testing.B) {
	recs, err := trace.ReadFile(conversationTrace(b))
	if err != nil {
		b.Fatal(err)
	}
	const workers = 8
	parts, err := trace.Partition(recs, workers, rand.New(rand.NewPCG(42, 0)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var passes, outputs int
	for range b.N {
		passes, outputs = 0, 0
		for w, part := range parts {
			cfg := DefaultConfig()
			cfg.Worker.ID = uint64(w)
			e := New(cfg)
			p, o := simulate(b, e, part, uint64(w)<<32)
			passes += p
			outputs += o
		}
	}
	b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N), "s/trace")
	b.ReportMetric(float64(passes), "passes")
	b.ReportMetric(float64(outputs), "tokens")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(passes), "ns/pass")
}

// BenchmarkEngineDecode measures one decode pass with n running requests
// of 12k-token prompts (the steady state of a loaded engine).
func BenchmarkEngineDecode(b *testing.B) {
	for _, n := range []int{16, 64, 256} {
		b.Run(fmt.Sprintf("running=%d", n), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.NumBlocks = 1 << 22
			e := New(cfg)
			for i := range n {
				toks := make([]uint32, 12000)
				for j := range toks {
					toks[j] = uint32(i*100000 + j/512)
				}
				if err := e.Add(Request{ID: uint64(i), Tokens: toks, MaxOutputTokens: 1 << 20}); err != nil {
					b.Fatal(err)
				}
			}
			for e.Stats().ActivePrefillTokens > 0 {
				e.Step(e.Now())
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				e.Step(e.Now())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/token")
		})
	}
}
