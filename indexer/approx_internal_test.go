package indexer

import (
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Refreshing the same blocks at the same instant (a simulator's batch of
// decisions at one timestamp) adds no queue records: the queue stays as
// long as the blocks, so compaction does not run on every insert.
func TestApproxSameInstantRefresh(t *testing.T) {
	a := NewApprox(ApproxConfig{})
	now := time.Unix(100, 0)
	locals := []uint64{11, 22, 33, 44}
	for range 1000 {
		a.Insert(kvevents.Worker{ID: 1}, locals, now)
	}
	if q := len(a.queue) - a.head; q != len(locals) {
		t.Fatalf("queue holds %d records for %d blocks", q, len(locals))
	}
	a.Insert(kvevents.Worker{ID: 1}, locals, now.Add(time.Second))
	if got := a.FindMatches(locals, now.Add(time.Second+a.TTL()-1)); len(got) != 1 || got[0].Blocks != 4 {
		t.Fatalf("refreshed blocks: %v", got)
	}
}
