package selector

import "math"

// maxRolledPasses bounds inFlight's walk over prefill passes (a backlog of
// maxRolledPasses full passes is already far beyond any cost difference).
const maxRolledPasses = 256

// inFlight rolls a rank's passes forward from the last one the router can
// date (loads.Pass: it started elapsed ms ago with started prefill tokens
// pending) to now, the way the engine schedules them (mocker, vLLM v1:
// one pass at a time; at its start each takes the prefill then pending
// up to chunk tokens, first come first served, beside one token per
// decoding request, and lasts PrefillTime(its prefill tokens) + dec).
// arr is the prefill routed since, oldest first (Candidate.PassQueue):
// a rolled pass takes an arrival only if it began after it came; with
// arr nil every pending token beyond started counts as come at once.
// pending is the rank's prefill tokens now. It returns the time left of
// the pass in flight, in ms, and the prefill tokens pending behind it.
//
// Passes with no prefill to take last dec ms (decode-only); with neither
// prefill nor decoding requests the engine idles until the next arrival,
// which starts a pass at once. A model that runs ahead of the engine
// (no first token yet where it expects one) charges the request less
// queue; the next first token dates a pass again.
func (t *Timing) inFlight(elapsed float64, started int, arr []PassArrival, pending float64, chunk int, dec float64) (left, waiting float64) {
	elapsed = max(elapsed, 0)
	c := float64(max(chunk, 1))
	unknown := arr == nil
	if unknown && pending > float64(started) {
		// Unknown arrivals: the tokens beyond started came with the pass.
		one := [1]PassArrival{{Ago: elapsed, Tokens: int(math.Ceil(pending)) - started}}
		arr = one[:]
	}
	tau := 0.0  // start of the rolled pass, ms after the dated one's
	done := 0.0 // tokens of the rolled passes before it
	come := float64(max(started, 0))
	k := 0 // arrivals counted into come
	wrapped := false
	for range maxRolledPasses {
		batch := min(c, max(0, come-done))
		switch {
		case batch > 0:
			d := dec + t.prefillTime(batch)
			if elapsed < tau+d {
				return tau + d - elapsed, max(0, pending-done-batch)
			}
			tau += d
			done += batch
		case k < len(arr):
			// Nothing come to take: decode-only passes, or an idle
			// engine, until the next arrival, which the first pass
			// starting after it takes (an idle engine starts one then).
			next := elapsed - arr[k].Ago
			if dec <= 0 {
				if next >= elapsed || unknown {
					return 0, max(0, pending-done)
				}
				tau = max(tau, next)
				come, k = admit(arr, k, elapsed, tau, come)
				continue
			}
			if next > tau+dec {
				tau += math.Floor((next-tau)/dec) * dec
			}
			if elapsed < tau+dec {
				return tau + dec - elapsed, max(0, pending-done)
			}
			tau += dec
		default:
			if pending <= 0 || wrapped {
				if dec > 0 {
					// Decode-only passes from tau on.
					return dec - mod(elapsed-tau, dec), 0
				}
				return 0, 0
			}
			// The model ran past every pending token, yet no first
			// token came: the engine computes more than the router
			// booked (a predicted hit it missed) or slower. Its prefill
			// is still under way: assume it cycles through the pending
			// tokens again.
			wrapped = true
			span, n := t.PrefillSpan(pending, chunk)
			elapsed = mod(elapsed-tau, span+float64(n)*dec)
			tau, done, come, k = 0, 0, pending, len(arr)
			continue
		}
		come, k = admit(arr, k, elapsed, tau, come)
	}
	// Past the bound: no pass left to wait for.
	return 0, max(0, pending-done)
}

// admit counts into come the arrivals of arr from k on that came by tau
// ms after the dated pass (elapsed ms ago); it returns come and the first
// arrival not counted.
func admit(arr []PassArrival, k int, elapsed, tau, come float64) (float64, int) {
	for k < len(arr) && elapsed-arr[k].Ago <= tau {
		come += float64(arr[k].Tokens)
		k++
	}
	return come, k
}
