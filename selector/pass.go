package selector

import "math"

// maxRolledPasses bounds inFlight's walk over prefill passes (a backlog of
// maxRolledPasses full passes is already far beyond any cost difference).
const maxRolledPasses = 256

// inFlight rolls a rank's passes forward from the last one the router can
// date (loads.Pass: it started elapsed ms ago with started prefill tokens
// pending) to now, the way the engine schedules them (mocker, vLLM v1:
// one pass at a time; each takes the pending prefill up to chunk tokens,
// first come first served, beside one token per decoding request, and
// lasts PrefillTime(its prefill tokens) + dec). pending is the rank's
// prefill tokens now (those of requests routed since join the pool the
// next pass draws from). It returns the time left of the pass in flight,
// in ms, and the prefill tokens still pending behind it.
//
// Once the modeled prefill is exhausted and requests decode, passes of dec
// ms follow one another: the one in flight has dec - (elapsed mod dec)
// left. With neither, the rank is idle (0, 0). A model that runs ahead of
// the engine (no first token yet where it expects one) charges the
// request less queue; the next first token dates a pass again. With
// overdue (Config.PassOverdue) a first prefill pass that took every
// pending token and has outrun its model is still in flight instead.
func (t *Timing) inFlight(elapsed float64, started int, pending float64, chunk int, dec float64, overdue bool) (left, waiting float64) {
	elapsed = max(elapsed, 0)
	c := float64(max(chunk, 1))
	done := 0.0 // tokens of the rolled passes
	batch := min(c, max(0, float64(started)))
	wrapped := false
	for range maxRolledPasses {
		d := dec
		if batch > 0 {
			d += t.prefillTime(batch)
		}
		if d <= 0 {
			return 0, max(0, pending-done)
		}
		if elapsed < d {
			return d - elapsed, max(0, pending-done-batch)
		}
		if overdue && done == 0 && batch > 0 && (started > 0 && started <= chunk || started == 0 && pending <= c) {
			// The first prefill pass (the dated one, or the first after
			// decode-only passes) took every token pending when it
			// began, so it ends with first tokens, and none has come: it
			// is still in flight, ending any moment, and the tokens
			// routed since wait for the next (Config.PassOverdue).
			return 0, max(0, pending-batch)
		}
		elapsed -= d
		done += batch
		batch = min(c, max(0, pending-done))
		if batch > 0 {
			continue
		}
		if pending <= 0 || wrapped {
			break
		}
		// The model ran past every pending token, yet no first token
		// came: the engine computes more than the router booked (a
		// predicted hit it missed) or slower. Its prefill is still
		// under way: assume it cycles through the pending tokens again.
		wrapped = true
		span, n := t.PrefillSpan(pending, chunk)
		elapsed = math.Mod(elapsed, span+float64(n)*dec)
		done, batch = 0, min(c, pending)
	}
	if batch > 0 || dec <= 0 {
		// Past the bound, or idle: no pass left to wait for.
		return 0, max(0, pending-done)
	}
	return dec - math.Mod(elapsed, dec), 0
}
