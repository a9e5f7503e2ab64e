package selector

import "math"

// delayed prices the first tokens a request delays on a rank (Config.
// DelayOthers). Its prefill joins the pending prefill, first come first
// served, in passes of c tokens after the pass in flight: waiting tokens
// pending behind that pass, consumed tokens computed by it and the
// passes before (counted from the dated pass, whose started tokens and
// then arr's came in that order). The requests whose last prompt token
// falls in the pass its first chunk joins get their first token at that
// pass's end, which the chunk makes longer: each waits PrefillTime(r +
// chunk) - PrefillTime(r) more, r being their tokens in that pass. It
// returns how many wait and the time each loses, in ms.
func (t *Timing) delayed(arr []PassArrival, started int, consumed, waiting, own, c float64) (n int, each float64) {
	if waiting <= 0 || own <= 0 {
		return 0, 0
	}
	full := math.Floor(waiting/c) * c // waiting tokens in passes before its own
	r := waiting - full
	if r <= 0 {
		return 0, 0 // it starts a pass of its own
	}
	from := consumed + full // the stream position where its pass starts
	end := float64(max(started, 0))
	if end > from {
		n++
	}
	for _, a := range arr {
		end += float64(a.Tokens)
		if end > from {
			n++
		}
	}
	if n == 0 {
		// Tokens the router booked with no arrival of their own (a
		// dated pass with unknown arrivals): one request at least.
		n = 1
	}
	return n, t.prefillTime(min(c, r+own)) - t.prefillTime(r)
}
