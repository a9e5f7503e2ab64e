package indexer

import (
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Refreshing the same blocks at the same instant (a simulator's batch of
// decisions at one timestamp) neither grows the expiry list nor reorders
// it, and a later refresh still extends their life.
func TestApproxSameInstantRefresh(t *testing.T) {
	a := NewApprox(ApproxConfig{})
	now := time.Unix(100, 0)
	locals := []uint64{11, 22, 33, 44}
	for range 1000 {
		a.Insert(kvevents.Worker{ID: 1}, locals, now)
	}
	if n := len(a.nodes) - 1; n != len(locals) {
		t.Fatalf("%d list nodes for %d blocks", n, len(locals))
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	a.Insert(kvevents.Worker{ID: 1}, locals, now.Add(time.Second))
	if got := a.FindMatches(locals, now.Add(time.Second+a.TTL()-1)); len(got) != 1 || got[0].Blocks != 4 {
		t.Fatalf("refreshed blocks: %v", got)
	}
}
