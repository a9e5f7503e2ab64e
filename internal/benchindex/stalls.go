package benchindex

import (
	"runtime"
	"slices"
	"time"
)

// Stalls is what a stall probe saw: how often the machine took the CPU
// from a running thread for a while. On the 2-core test VM most such
// stalls are not context switches the kernel counts (getrusage shows
// none) and they are charged to the thread's CPU clock: about one per
// millisecond of 35-45 µs (the timer tick's period) on a quiet machine,
// and 2-3 times as many, of 20-70 µs, when the other agents load it. A
// lookup of mean wall time d overlaps one with probability about
// d x PerSec; once that passes 1%, the p99 is a stall, not the lookup
// (measured: the no-writer replay's lookups above 25 µs start in phase
// with a 1 ms period, and repeated at once they take 3.4 µs, as the
// median lookup does).
type Stalls struct {
	ProbeMS  float64 `json:"probe_ms"`
	PerSec   float64 `json:"per_sec"`   // stalls of at least MinStall per second
	P50us    float64 `json:"p50_us"`    // their median length
	P90us    float64 `json:"p90_us"`    //
	LostFrac float64 `json:"lost_frac"` // share of the probe's time they took
}

// MinStall is the shortest gap between two clock reads a stall probe
// counts (a read takes tens of nanoseconds).
const MinStall = 5 * time.Microsecond

// StallProbe is how long ProbeStalls spins.
const StallProbe = 200 * time.Millisecond

// ProbeStalls spins one locked OS thread for d reading the monotonic
// clock and counts the gaps of at least MinStall between reads.
func ProbeStalls(d time.Duration) Stalls {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	return probeStalls(d, func() time.Duration { return time.Since(start) })
}

// probeStalls is ProbeStalls on the clock now (time since the probe
// began).
func probeStalls(d time.Duration, now func() time.Duration) Stalls {
	var gaps []time.Duration
	var lost time.Duration
	t0 := now()
	last := t0
	for last-t0 < d {
		t := now()
		if g := t - last; g >= MinStall {
			gaps = append(gaps, g)
			lost += g
		}
		last = t
	}
	span := last - t0
	s := Stalls{ProbeMS: ms(span)}
	if len(gaps) == 0 || span <= 0 {
		return s
	}
	slices.Sort(gaps)
	s.PerSec = float64(len(gaps)) / span.Seconds()
	s.P50us = us(int64(gaps[len(gaps)/2]))
	s.P90us = us(int64(gaps[len(gaps)*9/10]))
	s.LostFrac = float64(lost) / float64(span)
	return s
}

// HitFrac is the share of operations of mean wall time meanus (µs)
// expected to overlap a stall.
func (s Stalls) HitFrac(meanus float64) float64 { return min(1, meanus*1e-6*s.PerSec) }
