package router

import (
	"math"
	"testing"
	"time"
)

// The wait for a sequence slot: the requests over the cap, plus this one,
// times the running mean gap between completions (weight 1/8).
func TestFinishesSlotWait(t *testing.T) {
	var f finishes
	t0 := time.Unix(100, 0)
	if w := f.slotWait(3, 300, 256); w != 0 {
		t.Errorf("no completion seen: wait %v", w)
	}
	f.observe(3, t0)
	if w := f.slotWait(3, 300, 256); w != 0 {
		t.Errorf("one completion, no gap yet: wait %v", w)
	}
	f.observe(3, t0.Add(40*time.Millisecond))  // first gap: 40 ms
	f.observe(3, t0.Add(40*time.Millisecond))  // a gap of 0: 40 + (0-40)/8 = 35
	f.observe(3, t0.Add(120*time.Millisecond)) // 80: 35 + (80-35)/8 = 40.625
	for _, tc := range []struct {
		requests, maxSeqs int
		want              float64
	}{
		{255, 256, 0},          // below the cap
		{256, 256, 40.625},     // at the cap: one completion
		{260, 256, 5 * 40.625}, // 4 over: five
		{260, 0, 0},            // cap unknown
	} {
		if w := f.slotWait(3, tc.requests, tc.maxSeqs); math.Abs(w-tc.want) > 1e-9 {
			t.Errorf("slotWait(%d requests, cap %d) = %v, want %v", tc.requests, tc.maxSeqs, w, tc.want)
		}
	}
	if w := f.slotWait(0, 300, 256); w != 0 {
		t.Errorf("another slot: wait %v", w)
	}
	if w := f.slotWait(7, 300, 256); w != 0 {
		t.Errorf("a slot never seen: wait %v", w)
	}
}
