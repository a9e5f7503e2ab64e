package indexer

import (
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Refreshing the same blocks at the same instant (a simulator's batch of
// decisions at one timestamp) neither grows the expiry order nor reorders
// it, and a later refresh still extends their life and frees the
// generation it took them from.
func TestApproxSameInstantRefresh(t *testing.T) {
	a := NewApprox(ApproxConfig{})
	now := time.Unix(100, 0)
	locals := []uint64{11, 22, 33, 44}
	for range 1000 {
		a.Insert(kvevents.Worker{ID: 1}, locals, now)
	}
	if q, n := a.queued(); q != 1 || n != len(locals) {
		t.Fatalf("%d generations listing %d items for %d blocks", q, n, len(locals))
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	a.Insert(kvevents.Worker{ID: 1}, locals, now.Add(time.Second))
	if q, n := a.queued(); q != 1 || n != len(locals) {
		t.Fatalf("after a refresh: %d generations listing %d items for %d blocks", q, n, len(locals))
	}
	if got := a.FindMatches(locals, now.Add(time.Second+a.TTL()-1)); len(got) != 1 || got[0].Blocks != 4 {
		t.Fatalf("refreshed blocks: %v", got)
	}
}

// queued returns the number of queued generations and of items they list.
func (a *Approx) queued() (gens, items int) {
	for gi := a.gens[0].next; gi != 0; gi = a.gens[gi].next {
		gens++
		items += len(a.gens[gi].ents) - a.gens[gi].lo
	}
	return gens, items
}
