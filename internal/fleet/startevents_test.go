package fleet_test

import (
	"fmt"
	"testing"
	"time"
)

// TestNoEventRejectedAtStart: a fresh fleet over NATS (what `kvrouter up`
// runs), before any traffic: every worker's first event (AllBlocksCleared)
// reaches the index, and none is counted as rejected, in /metrics or in
// any worker's ingest counts, although the event stream and the registry
// are read apart and a worker's first event may come before its
// registration.
func TestNoEventRejectedAtStart(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint("round", round), func(t *testing.T) {
			e := start(t, false, 4, 100, nil)
			seen := map[uint64]bool{}
			timeout := time.After(20 * time.Second)
			for len(seen) < 4 {
				select {
				case w := <-e.events:
					seen[w] = true
				case <-timeout:
					t.Fatalf("first events applied only from workers %v", seen)
				}
			}
			fe := e.f.Frontend()
			for _, w := range e.f.Workers() {
				if c := fe.IngestCounts(w.ID); len(c) != 0 {
					t.Errorf("worker %d: ingest counts %v at start, want none", w.ID, c)
				}
			}
			mfs, err := fe.Registry().Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == "kvrouter_events_rejected_total" {
					for _, m := range mf.GetMetric() {
						t.Errorf("at start: %s %v", mf.GetName(), m)
					}
				}
			}
		})
	}
}
