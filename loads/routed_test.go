package loads

import (
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// TestRouted: Routed reports the entry and Add's time, not the time of
// the request's last progress, and nothing once it is released.
func TestRouted(t *testing.T) {
	tr := New(DefaultConfig())
	t0 := time.Unix(10, 0)
	w := kvevents.Worker{ID: 3, Rank: 1}
	blocks := []uint64{7, 8, 9}
	if err := tr.Add(Entry{ID: "a", Worker: w, Blocks: blocks, PrefillTokens: 5}, t0); err != nil {
		t.Fatal(err)
	}
	blocks[0] = 99 // the tracker holds a copy
	if err := tr.PrefillDone("a", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := tr.Touch("a", t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	e, at, ok := tr.Routed("a")
	if !ok || !at.Equal(t0) || e.Worker != w || !slices.Equal(e.Blocks, []uint64{7, 8, 9}) || e.PrefillTokens != 5 {
		t.Fatalf("Routed = %+v, %v, %v; want worker %s, blocks [7 8 9], at %v", e, at, ok, w, t0)
	}
	if err := tr.Free("a"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := tr.Routed("a"); ok {
		t.Fatal("Routed reports a released request")
	}
}
