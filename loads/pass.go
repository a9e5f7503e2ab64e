package loads

import (
	"fmt"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Pass is what the tracker knows of a worker+rank's forward pass in flight
// (DESIGN.md §6: an engine runs one pass at a time and schedules, at each
// pass start, the prefill tokens then pending up to its token budget):
// when the last pass the router can date started, and the prefill tokens
// pending on the rank at that moment. Requests added after Start wait for
// a later pass. A pass is dated by the two moments the router sees: a
// request added to an idle rank starts one at once, and a first token
// (PrefillDone) ends one, the next starting then with every token still
// pending. The selector rolls the passes forward from there with the
// worker's timing model (selector.Candidate.Pass).
type Pass struct {
	// Start is when the pass started; zero when the rank is idle.
	Start time.Time
	// Tokens is the rank's PrefillTokens at Start.
	Tokens int
}

// String formats p as "pass start=15:04:05.000 tokens=N", or "idle".
func (p Pass) String() string {
	if p.Start.IsZero() {
		return "idle"
	}
	return fmt.Sprintf("pass start=%s tokens=%d", p.Start.UTC().Format("15:04:05.000"), p.Tokens)
}

// PassAt returns the pass model of the worker at slot s (see Slot).
func (t *Tracker) PassAt(s int) Pass { return t.slots[s].pass }

// PassParts returns PassAt(s)'s fields. A caller that reads every slot's
// gets them in registers, where a Pass (seven words) is copied through
// memory, twice, with a stall on each copy's overlapping loads.
func (t *Tracker) PassParts(s int) (start time.Time, tokens int) {
	p := &t.slots[s].pass
	return p.Start, p.Tokens
}

// PassOf returns w's pass model (idle when w has no slot).
func (t *Tracker) PassOf(w kvevents.Worker) Pass {
	s, ok := t.slotOf[w]
	if !ok {
		return Pass{}
	}
	return t.slots[s].pass
}
