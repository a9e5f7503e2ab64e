package router

import "testing"

// The estimate starts at 0, takes the first observation whole, then moves
// by 2/(window+1) of each residual, separately per key.
func TestOutputAverage(t *testing.T) {
	a := NewOutputAverage(3) // alpha 0.5
	if got := a.Estimate("m"); got != 0 {
		t.Fatalf("estimate before any observation %d, want 0", got)
	}
	for _, c := range []struct {
		obs, want int
	}{{100, 100}, {200, 150}, {0, 75}, {-5, 38}} {
		a.Observe("m", c.obs)
		if got := a.Estimate("m"); got != c.want {
			t.Fatalf("after %d: estimate %d, want %d", c.obs, got, c.want)
		}
	}
	if got, ok := a.Lookup("m"); !ok || got != 38 {
		t.Fatalf("Lookup = %d, %v", got, ok)
	}
	if got, ok := a.Lookup("other"); ok || got != 0 {
		t.Fatalf("another model's estimate %d, want 0", got)
	}
}
