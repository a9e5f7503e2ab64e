package mocker

import (
	"slices"
	"testing"
	"time"
)

func TestLoRASlotsLRU(t *testing.T) {
	s := LoRASlots{Max: 2}
	ms := time.Millisecond
	step := func(name string, now time.Duration, wantReady time.Duration, wantLoaded bool, want ...string) {
		t.Helper()
		r, l := s.Use(name, now, 15*ms)
		if r != wantReady || l != wantLoaded || !slices.Equal(s.Loaded(), want) {
			t.Fatalf("Use(%s, %v) = %v, %v, loaded %v; want %v, %v, %v", name, now, r, l, s.Loaded(), wantReady, wantLoaded, want)
		}
	}
	step("a", 0, 15*ms, true, "a")
	step("a", 5*ms, 15*ms, false, "a") // still loading: usable when the load lands
	step("b", 20*ms, 35*ms, true, "a", "b")
	step("a", 40*ms, 40*ms, false, "b", "a") // loaded: usable now, most recent
	step("c", 50*ms, 65*ms, true, "a", "c")  // evicts b, the least recently used
	step("b", 60*ms, 75*ms, true, "c", "b")  // b loads again
}
