package ordering_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	. "github.com/kvrouter/kvrouter/ordering"
)

// BenchmarkOrderOffer: events of W workers, in order (the common case) and
// with every 8th pair of a worker's events swapped (a gap opened and
// closed each time).
func BenchmarkOrderOffer(b *testing.B) {
	for _, swapped := range []bool{false, true} {
		for _, w := range []int{1, 64} {
			b.Run(fmt.Sprintf("workers=%d/reordered=%v", w, swapped), func(b *testing.B) {
				o := New(DefaultConfig(), nil)
				now := time.Unix(0, 0)
				next := make([]uint64, w)
				var out []kvevents.Event
				ev := kvevents.Event{Kind: kvevents.KindStored}
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					k := i % w
					next[k]++
					id := next[k]
					if swapped && id%8 == 1 {
						id++ // deliver id+1 first...
					} else if swapped && id%8 == 2 {
						id-- // ...then id
					}
					ev.WorkerID, ev.EventID = uint64(k)+1, id
					out = o.Offer(out[:0], &ev, now)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}
