package router

import "time"

// finishWeight is the weight of a new gap in a rank's running mean gap
// between completions: about the last 8 completions count.
const finishWeight = 1.0 / 8

// finishes keeps, per loads slot, when the rank's last request finished
// and the running mean gap between its completions, in ms: at its
// sequence cap (WorkerInfo.MaxNumSeqs) an engine admits a request only
// once a running one ends, so k requests over the cap wait about k gaps
// (selector Candidate.SlotWait).
type finishes struct {
	last []time.Time
	gap  []float64
	seen []bool // gap holds at least one gap
}

// observe records a completion on slot s at now.
func (f *finishes) observe(s int, now time.Time) {
	if s >= len(f.last) {
		f.last = append(f.last, make([]time.Time, s+1-len(f.last))...)
		f.gap = append(f.gap, make([]float64, s+1-len(f.gap))...)
		f.seen = append(f.seen, make([]bool, s+1-len(f.seen))...)
	}
	if last := f.last[s]; !last.IsZero() {
		g := max(0, float64(now.Sub(last))/float64(time.Millisecond))
		if !f.seen[s] {
			f.gap[s], f.seen[s] = g, true
		} else {
			f.gap[s] += finishWeight * (g - f.gap[s])
		}
	}
	f.last[s] = now
}

// slotWait is how long a request waits for a sequence slot on slot s with
// requests active and a cap of maxSeqs (0: unknown), in ms: 0 below the
// cap or before two completions were seen.
func (f *finishes) slotWait(s, requests, maxSeqs int) float64 {
	if maxSeqs <= 0 || requests < maxSeqs || s >= len(f.gap) {
		return 0
	}
	return float64(requests-maxSeqs+1) * f.gap[s]
}
