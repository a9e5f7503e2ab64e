package router

import (
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/selector"
)

// TestPassArrivals: the router hands the selector the moment each
// pending request came (loads.PassArrivals as selector.Candidate.
// PassQueue). a's first token dates a pass at 50 ms; a then decodes,
// in passes of DT(0.005) = 6.0094 ms from there. b's 2000 tokens come at
// 500 ms (450 ms into the roll), inside the decode pass that began at
// 74 * DT = 444.70 ms and ends at 75 * DT = 450.71 ms. c, routed at
// 500.5 ms, sees that decode pass in flight (0.21 ms left) with b's 2000
// tokens waiting behind it, as the engine has them. Without
// selector.Config.PassArrivals the roll puts b in the pass after the
// first decode pass, long over, so nothing waits.
func TestPassArrivals(t *testing.T) {
	for _, on := range []bool{false, true} {
		cand, sc := decodingScenario(t, func(c *selector.Config) { c.PassArrivals = on }, 500*time.Millisecond+500*time.Microsecond)
		dec := sc.Timing.DecodeTime(5.0 / 1000)
		checkPass(t, "PassArrivals", on, cand, 75*dec-450.5, 2000)
	}
}
