package benchindex

import (
	"math"
	"strings"
	"testing"
	"time"
)

// fakeStallClock advances step per read and, once every period of its
// time (stalls included), by stall more: a machine that stalls
// periodically.
type fakeStallClock struct {
	t, next, step, period, stall time.Duration
}

func (c *fakeStallClock) now() time.Duration {
	c.t += c.step
	if c.t >= c.next {
		c.t += c.stall
		c.next += c.period
	}
	return c.t
}

// TestProbeStalls: a clock that stalls 40 µs every millisecond reads as
// 1000 stalls/s of 40 µs taking 4% of the time; gaps below MinStall are
// not stalls, and gaps with a context switch are counted apart.
func TestProbeStalls(t *testing.T) {
	c := &fakeStallClock{next: time.Millisecond, step: 30 * time.Nanosecond, period: time.Millisecond, stall: 40 * time.Microsecond}
	none := func() int64 { return 0 }
	s := probeStalls(100*time.Millisecond, c.now, none)
	near := func(got, want float64) bool { return math.Abs(got-want) <= 0.03*want }
	if !near(s.PerSec, 1000) || !near(s.P50us, 40.03) || !near(s.P90us, 40.03) || !near(s.LostFrac, 0.04) || s.ProbeMS < 100 {
		t.Fatalf("periodic 40 µs stalls read as %+v", s)
	}
	if h := s.HitFrac(5); !near(h, 5*s.PerSec/1e6) || s.SwitchedPerSec != 0 {
		t.Fatalf("hit share of a 5 µs lookup %g, want %g; switched %g/s, want 0", h, 5*s.PerSec/1e6, s.SwitchedPerSec)
	}
	c = &fakeStallClock{next: time.Millisecond, step: 30 * time.Nanosecond, period: time.Millisecond, stall: MinStall / 2}
	if s := probeStalls(10*time.Millisecond, c.now, none); s.PerSec != 0 || s.LostFrac != 0 {
		t.Fatalf("gaps of %v counted as stalls: %+v", MinStall/2, s)
	}
	// Every other stall comes with a context switch.
	c = &fakeStallClock{next: time.Millisecond, step: 30 * time.Nanosecond, period: time.Millisecond, stall: 40 * time.Microsecond}
	reads := int64(0)
	half := func() int64 { reads++; return reads / 2 }
	if h := probeStalls(100*time.Millisecond, c.now, half); !near(h.PerSec, 500) || !near(h.SwitchedPerSec, 500) || !near(h.LostFrac, 0.02) {
		t.Fatalf("half the stalls switched read as %+v", h)
	}
	rep := Report{Idle: []Result{{Index: "flash", LookupP50us: 5}}, IdleStalls: []Stalls{s}}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "flash  no writers: a 100 ms probe before the replay saw the machine stall a spinning thread, not switching it out, 1000 times/s") {
		t.Fatalf("report lacks the stall line:\n%s", b.String())
	}
}
