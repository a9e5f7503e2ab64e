package benchindex

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/kvrouter/kvrouter/internal/traces"
	"github.com/kvrouter/kvrouter/mocker"
)

var (
	idleOnce sync.Once
	idleTL   *Timeline
	idleErr  error
)

// idleTimeline generates, once per process, the stream of the lookup
// latency goal's shape: the conversation trace in 2 copies with prompts
// extended 2x (`bench index --duplicate 2 --length-factor 2`), lookups cut
// to 64 blocks, W=64, B=64. KVROUTER_BENCH_REQUESTS keeps only the first
// N requests of the scaled trace (0 or unset = all).
func idleTimeline(b *testing.B) *Timeline {
	b.Helper()
	idleOnce.Do(func() {
		if _, err := os.Stat(benchTrace); err != nil {
			idleErr = err
			return
		}
		cfg := DefaultConfig()
		cfg.Trace = benchTrace
		cfg.Duplicate, cfg.LengthFactor, cfg.LookupBlocks = 2, 2, 64
		recs, err := traces.Load(cfg.Trace)
		if err != nil {
			idleErr = err
			return
		}
		if recs, err = Scale(recs, cfg.Duplicate, cfg.LengthFactor); err != nil {
			idleErr = err
			return
		}
		if v := os.Getenv("KVROUTER_BENCH_REQUESTS"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				idleErr = err
				return
			}
			if n > 0 && n < len(recs) {
				recs = recs[:n]
			}
		}
		p, err := PrepareRecords(context.Background(), cfg, recs)
		if err != nil {
			idleErr = err
			return
		}
		idleTL = p.Timeline
	})
	if idleErr != nil {
		b.Skipf("trace not available: %v", idleErr)
	}
	return idleTL
}

// BenchmarkIdleLookups is `bench index`'s "no writers" pass on its own:
// the lookups of idleTimeline replayed unpaced on one reader against a
// flash index (behind Concurrent, as the command runs it) preloaded with
// every event, before the timer starts. Most lookups find the index's
// lines cold (about a million entries, far beyond the caches), so this
// times the lookup's dependent cache misses. One op is one pass over all
// lookups; p50-ns, p99-ns and mean-ns are per lookup, averaged over the
// passes; entries is the index's distinct blocks (Stats.Nodes). shards=2
// is the index the command builds on two cores (one shard per writer).
//
//	go test -run '^$' -bench IdleLookups -benchtime 5x ./internal/benchindex
func BenchmarkIdleLookups(b *testing.B) {
	tl := idleTimeline(b)
	lt := Merge(tl.Stream.LookupsOnly())
	hint := BlocksPerWorker(mocker.DefaultConfig().NumBlocks)
	for _, shards := range []int{1, 2} {
		b.Run(fmt.Sprintf("index=flash/shards=%d", shards), func(b *testing.B) {
			f, err := NewShardedTargetFactory(IndexFlash, shards, shards, hint)
			if err != nil {
				b.Fatal(err)
			}
			t, err := WithPreload(f, tl.Stream.Events).New()
			if err != nil {
				b.Fatal(err)
			}
			shared := &reusedTarget{Target: t}
			one := TargetFactory{Name: f.Name, New: func() (Target, error) { return shared, nil }}
			var p50, p99, mean float64
			b.ResetTimer()
			for b.Loop() {
				s, err := Replay(context.Background(), lt, one, ReplayOptions{Readers: 1})
				if err != nil {
					b.Fatal(err)
				}
				r := NewResult(f.Name, lt, s)
				p50 += r.LookupP50us * 1e3
				p99 += r.LookupP99us * 1e3
				mean += s.Lookups.Mean()
			}
			b.StopTimer()
			if _, err := shared.Finish(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(t.(*IndexTarget).Index().Stats().Nodes), "entries")
			n := float64(b.N)
			b.ReportMetric(p50/n, "p50-ns")
			b.ReportMetric(p99/n, "p99-ns")
			b.ReportMetric(mean/n, "mean-ns")
		})
	}
}
