package benchindex

import (
	"runtime"
	"slices"
	"time"

	"github.com/kvrouter/kvrouter/internal/cputime"
)

// Stalls is what a stall probe saw: how often the machine took the CPU
// from a running thread for a while. On the 2-core test VM most such
// stalls are no context switch the kernel counts (getrusage shows none)
// and are charged to the thread's CPU clock. Measured with other agents
// busy: at load 4.5, 2000/s, among them one every millisecond (the timer
// tick's period) of 35-45 µs; at load 5.5, 3000/s of 20-70 µs, 11% of the
// time. A lookup of wall time d overlaps one with probability about
// d x PerSec; once that passes 1% the p99 is a stall, not the lookup
// (the no-writer replay's lookups of the conversation trace above 25 µs
// start in phase with a 1 ms period, concentration 0.43-0.67 against
// 0.09 for random starts, and repeated at once take 3.4 µs against 2.8 µs
// for the median ones).
//
// Gaps during which the thread was switched off its CPU (descheduled for
// another thread: cputime.ThreadSwitches changed) are counted apart, in
// SwitchedPerSec; where that counter is unsupported every gap is a stall.
type Stalls struct {
	ProbeMS        float64 `json:"probe_ms"`
	PerSec         float64 `json:"per_sec"`          // stalls of at least MinStall per second
	P50us          float64 `json:"p50_us"`           // their median length
	P90us          float64 `json:"p90_us"`           //
	LostFrac       float64 `json:"lost_frac"`        // share of the probe's time they took
	SwitchedPerSec float64 `json:"switched_per_sec"` // gaps of at least MinStall with a context switch
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
	switches := func() int64 { n, _ := cputime.ThreadSwitches(); return n }
	return probeStalls(d, func() time.Duration { return time.Since(start) }, switches)
}

// probeStalls is ProbeStalls on the clock now (time since the probe
// began) and the thread's context-switch counter switches, read only
// after a gap.
func probeStalls(d time.Duration, now func() time.Duration, switches func() int64) Stalls {
	var gaps []time.Duration
	var lost time.Duration
	switched := 0
	sw := switches()
	t0 := now()
	last := t0
	for last-t0 < d {
		t := now()
		if g := t - last; g >= MinStall {
			if n := switches(); n != sw {
				sw = n
				switched++
			} else {
				gaps = append(gaps, g)
				lost += g
			}
			// Not the counter's read: its time is no stall.
			t = now()
		}
		last = t
	}
	span := last - t0
	s := Stalls{ProbeMS: ms(span)}
	if span <= 0 {
		return s
	}
	s.SwitchedPerSec = float64(switched) / span.Seconds()
	if len(gaps) == 0 {
		return s
	}
	slices.Sort(gaps)
	s.PerSec = float64(len(gaps)) / span.Seconds()
	s.P50us = us(int64(gaps[len(gaps)/2]))
	s.P90us = us(int64(gaps[len(gaps)*9/10]))
	s.LostFrac = float64(lost) / float64(span)
	return s
}

// HitFrac is the share of operations of wall time d µs (without stalls)
// expected to overlap a stall.
func (s Stalls) HitFrac(d float64) float64 { return min(1, d*1e-6*s.PerSec) }
