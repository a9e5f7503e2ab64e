package benchindex

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/trace"
)

// benchTrace is the conversation trace, relative to this package.
var benchTrace = filepath.Join("..", "..", "..", "shared", "data", "conversation_trace.jsonl.gz")

var (
	benchOnce sync.Once
	benchTL   *Timeline
	benchErr  error
)

// benchTimeline generates, once per process, the stream of the first 3000
// requests (KVROUTER_BENCH_REQUESTS overrides; 0 = all) of the conversation
// trace over 64 workers (B=64; KVROUTER_BENCH_BLOCK_SIZE overrides).
func benchTimeline(b *testing.B) *Timeline {
	b.Helper()
	benchOnce.Do(func() {
		if _, err := os.Stat(benchTrace); err != nil {
			benchErr = err
			return
		}
		recs, err := trace.ReadFile(benchTrace)
		if err != nil {
			benchErr = err
			return
		}
		cfg := DefaultConfig()
		cfg.Trace = benchTrace
		n := 3000
		if v := os.Getenv("KVROUTER_BENCH_REQUESTS"); v != "" {
			if n, err = strconv.Atoi(v); err != nil {
				benchErr = err
				return
			}
		}
		if n <= 0 || n > len(recs) {
			n = len(recs)
		}
		if v := os.Getenv("KVROUTER_BENCH_BLOCK_SIZE"); v != "" {
			if cfg.BlockSize, err = strconv.Atoi(v); err != nil {
				benchErr = err
				return
			}
		}
		p, err := PrepareRecords(context.Background(), cfg, recs[:n])
		if err != nil {
			benchErr = err
			return
		}
		benchTL = p.Timeline
	})
	if benchErr != nil {
		b.Skipf("trace not available: %v", benchErr)
	}
	return benchTL
}

// nullTarget does nothing: index=null measures the harness's own cost.
type nullTarget struct{}

func (nullTarget) Start(context.Context, int) error      { return nil }
func (nullTarget) Submit(*kvevents.Event) error          { return nil }
func (nullTarget) Lookup(_, _ int, locals []uint64) int  { return len(locals) }
func (nullTarget) Queued() int64                         { return 0 }
func (nullTarget) Finish(context.Context) (Final, error) { return Final{}, nil }

// BenchmarkReplay replays a slice of the conversation trace (first 3000
// requests, W=64, B=64), unpaced, against each index and drains it: one op
// is one whole replay plus flush. phase=mixed is the benchmark's timeline
// (lookups and events), phase=events the events alone, phase=lookups the
// lookups alone against the index built from every event (built before the
// timer starts). index=null measures the harness itself. Run with
// -cpuprofile to see where an index spends its time, e.g.
//
//	go test -run '^$' -bench 'Replay/index=flash/phase=events' -cpuprofile cpu.out ./internal/benchindex
func BenchmarkReplay(b *testing.B) {
	tl := benchTimeline(b)
	phases := []struct {
		name    string
		tl      *Timeline
		preload bool
	}{
		{"mixed", tl, false},
		{"events", Merge(tl.Stream.EventsOnly()), false},
		{"lookups", Merge(tl.Stream.LookupsOnly()), true},
	}
	for _, name := range append([]string{"null"}, AllIndexes...) {
		for _, ph := range phases {
			b.Run("index="+name+"/phase="+ph.name, func(b *testing.B) {
				f := TargetFactory{Name: "null", New: func() (Target, error) { return nullTarget{}, nil }}
				if name != "null" {
					var err error
					hint := BlocksPerWorker(mocker.DefaultConfig().NumBlocks)
					if f, err = NewTargetFactory(name, 0, hint); err != nil {
						b.Fatal(err)
					}
				}
				if ph.preload && name != "null" {
					f = WithPreload(f, tl.Stream.Events)
				}
				benchReplay(b, ph.tl, f)
			})
		}
	}
}

func benchReplay(b *testing.B, tl *Timeline, f TargetFactory) {
	var p99, drained, cpu time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		// Building a target (and preloading it) is not part of the op.
		t, err := f.New()
		if err != nil {
			b.Fatal(err)
		}
		one := TargetFactory{Name: f.Name, New: func() (Target, error) { return t, nil }}
		b.StartTimer()
		c0 := processCPU()
		s, err := Replay(context.Background(), tl, one, ReplayOptions{})
		cpu += processCPU() - c0
		if err != nil {
			b.Fatal(err)
		}
		if s.Final.Rejected > 0 {
			b.Fatalf("%d events rejected", s.Final.Rejected)
		}
		p99 += time.Duration(s.Lookups.ValueAtQuantile(99))
		drained += s.Drained
	}
	n := float64(b.N)
	secs := drained.Seconds() / n
	b.ReportMetric(float64(tl.BlockOps())/secs, "blockops/s")
	b.ReportMetric(float64(tl.Ops())/secs, "ops/s")
	if cpu > 0 {
		// Per CPU-second of the whole process (every goroutine, the GC):
		// what a machine shared with other jobs moves least.
		b.ReportMetric(float64(tl.BlockOps())*n/cpu.Seconds(), "cpu-blockops/s")
	}
	if tl.Lookups > 0 {
		b.ReportMetric(float64(p99)/n/1e3, "p99-µs")
	}
}
