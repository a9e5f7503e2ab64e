package benchindex

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/cputime"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
)

// BenchmarkApply applies the events of the benchmark's stream (see
// benchTimeline) to a fresh index inline, on one goroutine locked to its
// thread: no Concurrent, no queue, no pacing. shards=1 is one index;
// shards=2 is the two indexes `kvrouter-study bench index` builds on 2 cores (one
// per writer), applied here one after the other on one thread, so its
// figure is what two writers could reach with perfect scaling and a free
// harness. blockops/s is by wall clock, cpu-blockops/s by the thread's CPU
// time (what a loaded machine does not move). Compare with BenchmarkReplay
// phase=events, the same events through Concurrent's sticky writers:
//
//	KVROUTER_BENCH_REQUESTS=0 go test -run '^$' -bench 'Apply|Replay/index=flash/phase=events' ./internal/benchindex
func BenchmarkApply(b *testing.B) {
	tl := benchTimeline(b)
	// Timeline order (Stream.Events is grouped by worker).
	var evs []*kvevents.Event
	for _, e := range tl.Entries {
		if e.Kind == OpEvent {
			evs = append(evs, &tl.Stream.Events[e.Index].Event)
		}
	}
	hint := mocker.DefaultConfig().NumBlocks
	for _, name := range AllIndexes {
		for _, shards := range []int{1, 2} {
			b.Run("index="+name+"/shards="+strconv.Itoa(shards), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var cpu, wall time.Duration
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					idx := newApplyIndex(name, shards, hint)
					runtime.GC()
					b.StartTimer()
					c0, _ := cputime.Thread()
					t0 := time.Now()
					for _, ev := range evs {
						if err := idx.Apply(ev); err != nil {
							b.Fatal(err)
						}
					}
					wall += time.Since(t0)
					c1, _ := cputime.Thread()
					cpu += c1 - c0
				}
				ops := float64(tl.StoredBlocks+tl.RemovedBlocks) * float64(b.N)
				b.ReportMetric(ops/wall.Seconds(), "blockops/s")
				if cpu > 0 {
					b.ReportMetric(ops/cpu.Seconds(), "cpu-blockops/s")
				}
			})
		}
	}
}

func newApplyIndex(name string, shards, hint int) indexer.Index {
	one := func() indexer.Index {
		if name == IndexRadix {
			c := indexer.DefaultRadixConfig()
			c.BlocksPerWorker = hint
			return indexer.NewRadix(c)
		}
		c := indexer.DefaultFlashConfig()
		c.BlocksPerWorker = hint
		return indexer.NewFlash(c)
	}
	if shards == 1 {
		return one()
	}
	return indexer.NewSharded(shards, one)
}
