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
	} {
		left, waiting := tm.inFlight(tc.elapsed, tc.started, nil, tc.pending, 8192, tc.dec)
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
				left, waiting := tm.inFlight(elapsed, int(pending), nil, pending, 8192, dec)
				if left < 0 || left > tm.PrefillTime(8192)+dec || waiting < 0 || waiting > pending {
					t.Errorf("inFlight(%g, %g, dec %g) = %g, %g", elapsed, pending, dec, left, waiting)
				}
			}
		}
	}
}

// With the moments the pending prefill came (Candidate.PassQueue), a
// rolled pass takes only what came before it began, as the engine does.
func TestInFlightArrivals(t *testing.T) {
	tm := DefaultTiming()
	pt := tm.PrefillTime
	for _, tc := range []struct {
		name                  string
		elapsed               float64
		started               int
		arr                   []PassArrival
		pending, dec          float64
		wantLeft, wantWaiting float64
	}{
		// The dated pass of 100 tokens ends at PT(100) = 18.07 ms; 600
		// came 10 ms in (taken by the next pass) and 300 at 30 ms, after
		// that pass began: they wait behind it.
		{name: "a later arrival waits", elapsed: 40, started: 100, pending: 1000,
			arr:      []PassArrival{{Ago: 30, Tokens: 600}, {Ago: 10, Tokens: 300}},
			wantLeft: pt(100) + pt(600) - 40, wantWaiting: 300},
		// Without the moments both join the pass after the dated one.
		{name: "unknown moments", elapsed: 40, started: 100, pending: 1000,
			wantLeft: pt(100) + pt(900) - 40},
		// Decode-only passes of 20 ms from the dated pass; 500 came 45 ms
		// in: the pass at 60 takes it, in flight 10 ms later.
		{name: "decode passes, then the arrival", elapsed: 70, dec: 20, pending: 500,
			arr:      []PassArrival{{Ago: 25, Tokens: 500}},
			wantLeft: 60 + 20 + pt(500) - 70},
		// Still in the decode pass it came in: it waits.
		{name: "in the decode pass it came in", elapsed: 58, dec: 20, pending: 500,
			arr:      []PassArrival{{Ago: 13, Tokens: 500}},
			wantLeft: 2, wantWaiting: 500},
		// Long after: thousands of decode passes are skipped at once; it
		// came 8 ms into the one that began at 99980 ms.
		{name: "skips decode passes", elapsed: 1e5 - 5, dec: 20, pending: 500,
			arr:      []PassArrival{{Ago: 7, Tokens: 500}},
			wantLeft: 5, wantWaiting: 500},
		// Nothing decodes and nothing was pending: the engine idled until
		// the 400 came, 30 ms in, and started their pass then.
		{name: "idle until it came", elapsed: 35, pending: 400,
			arr:      []PassArrival{{Ago: 5, Tokens: 400}},
			wantLeft: pt(400) - 5},
	} {
		left, waiting := tm.inFlight(tc.elapsed, tc.started, tc.arr, tc.pending, 8192, tc.dec)
		if math.Abs(left-tc.wantLeft) > 1e-9 || math.Abs(waiting-tc.wantWaiting) > 1e-9 {
			t.Errorf("%s: inFlight = %.4f ms left, %.0f waiting; want %.4f, %.0f", tc.name, left, waiting, tc.wantLeft, tc.wantWaiting)
		}
	}
}
