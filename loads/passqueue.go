package loads

import (
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Arrival is prefill routed to a rank after its dated pass started
// (Pass.Start): Tokens uncached prompt tokens booked at At. The engine
// schedules at each pass start only the prefill then pending, so a
// pass rolled forward from Start takes these tokens only if it began
// after they came (DESIGN.md §6); counted into the pass in flight
// they would make the queue behind it look empty.
type Arrival struct {
	At     time.Time
	Tokens int
}

// MaxArrivals bounds the arrivals kept per rank since its dated pass. A
// rank gets a first token, which dates a new pass and drops them, every
// prefill pass; past the bound the two oldest merge into one at the later
// moment (their tokens then wait one pass more in the model, never less).
const MaxArrivals = 32

// PassArrivals returns the prefill routed to the worker at slot s since
// its dated pass started, oldest first. The slice is the tracker's: valid
// until its next change, not to be modified.
func (t *Tracker) PassArrivals(s int) []Arrival { return t.slots[s].arr }

// PassArrivalsOf is PassArrivals by worker (nil when w has no slot).
func (t *Tracker) PassArrivalsOf(w kvevents.Worker) []Arrival {
	s, ok := t.slotOf[w]
	if !ok {
		return nil
	}
	return t.slots[s].arr
}

// arrive records tokens of prefill routed to st at now, after its pass
// was dated.
func (st *slot) arrive(now time.Time, tokens int) {
	if tokens <= 0 {
		return
	}
	if len(st.arr) >= MaxArrivals {
		st.arr[1].Tokens += st.arr[0].Tokens
		st.arr = append(st.arr[:0], st.arr[1:]...)
	}
	st.arr = append(st.arr, Arrival{At: now, Tokens: tokens})
}

// unarrive drops the arrival of a request released in prefill (added at
// at with tokens), if it is still listed on its own.
func (st *slot) unarrive(at time.Time, tokens int) {
	for i, a := range st.arr {
		if a.At.Equal(at) && a.Tokens == tokens {
			st.arr = append(st.arr[:i], st.arr[i+1:]...)
			return
		}
	}
}
