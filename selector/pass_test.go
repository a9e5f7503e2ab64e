package selector

import (
	"math"
	"testing"
)

// inFlight rolls the passes of the engine's schedule forward: each pass
// takes up to chunk pending tokens, first come first served.
func TestInFlight(t *testing.T) {
	tm := DefaultTiming()
	full := tm.PrefillTime(8192) // 169.11 ms
	for _, tc := range []struct {
		name                  string
		elapsed               float64
		started               int
		pending               float64
		dec                   float64
		overdue               bool
		wantLeft, wantWaiting float64
	}{
		{name: "idle", elapsed: 10},
		{name: "first pass", elapsed: 9, started: 20000, pending: 20000,
			wantLeft: full - 9, wantWaiting: 20000 - 8192},
		// The second pass takes the next 8192 tokens; 3616 wait behind it.
		{name: "second pass", elapsed: full + 10, started: 20000, pending: 20000,
			wantLeft: full - 10, wantWaiting: 20000 - 2*8192},
		// Tokens routed after the dated pass started join the next one.
		{name: "arrivals join the next pass", elapsed: tm.PrefillTime(100) + 10, started: 100, pending: 700,
			wantLeft: tm.PrefillTime(600) - 10},
		// Decode-only passes of 20 ms: 45 ms after the dated one started,
		// 5 ms into the third.
		{name: "decode passes", elapsed: 45, dec: 20, wantLeft: 15},
		// A mixed pass (prefill + decode share), then decode passes.
		{name: "mixed then decode", elapsed: tm.PrefillTime(100) + 20 + 5, started: 100, dec: 20,
			wantLeft: 15},
		// No first token where the model expects one: the engine is still
		// on the pending tokens; it cycles through them again.
		{name: "wraps", elapsed: 2*full + 30, started: 8192, pending: 8192,
			wantLeft: full - 30},
		// Config.PassOverdue: the dated pass holds all 100 tokens pending
		// at its start, so it ends with a first token; none came 10 ms
		// past its modeled end: still in flight, the 600 routed since
		// wait for the next pass.
		{name: "overdue", elapsed: tm.PrefillTime(100) + 10, started: 100, pending: 700, overdue: true,
			wantWaiting: 600},
		{name: "overdue, as above", elapsed: 2*full + 30, started: 8192, pending: 8192, overdue: true},
		// A dated pass of 20000 tokens takes only the first 8192: it need
		// not end with a first token, so the passes roll on.
		{name: "overdue needs every request in the pass", elapsed: full + 10, started: 20000, pending: 20000, overdue: true,
			wantLeft: full - 10, wantWaiting: 20000 - 2*8192},
		// Before its modeled end a pass is in flight either way.
		{name: "not yet overdue", elapsed: 9, started: 100, pending: 700, overdue: true,
			wantLeft: tm.PrefillTime(100) - 9, wantWaiting: 600},
	} {
		left, waiting := tm.inFlight(tc.elapsed, tc.started, tc.pending, 8192, tc.dec, tc.overdue)
		if math.Abs(left-tc.wantLeft) > 1e-9 || math.Abs(waiting-tc.wantWaiting) > 1e-9 {
			t.Errorf("%s: inFlight = %.4f ms left, %.0f waiting; want %.4f, %.0f", tc.name, left, waiting, tc.wantLeft, tc.wantWaiting)
		}
	}
}

// However long ago the pass was dated, the time left never exceeds one
// pass and the tokens waiting never exceed those pending.
func TestInFlightBounds(t *testing.T) {
	tm := DefaultTiming()
	for _, elapsed := range []float64{0, 1, 169, 1e3, 1e5, 1e9} {
		for _, pending := range []float64{0, 1, 8191, 8192, 1e5, 1e7} {
			for _, dec := range []float64{0, 7.5} {
				for _, overdue := range []bool{false, true} {
					left, waiting := tm.inFlight(elapsed, int(pending), pending, 8192, dec, overdue)
					if left < 0 || left > tm.PrefillTime(8192)+dec || waiting < 0 || waiting > pending {
						t.Errorf("inFlight(%g, %g, dec %g, overdue %v) = %g, %g", elapsed, pending, dec, overdue, left, waiting)
					}
				}
			}
		}
	}
}
