package replay

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kvrouter/kvrouter/trace"
)

type pacerKind uint8

const (
	kindUnpaced pacerKind = iota
	kindRecorded
	kindFixed
	kindPoisson
)

// Pacer says when each request is sent. The zero value is Unpaced.
type Pacer struct {
	kind  pacerKind
	speed float64 // Recorded: timestamps are divided by speed
	rate  float64 // FixedRate, Poisson: requests per second
	// Poisson: the arrival times, drawn once (At stays a pure lookup),
	// from the PCG source (seed, stream); one request in every of them
	// when several paths share one process (Every).
	times        []time.Duration
	seed, stream uint64
	every        int
}

// Unpaced sends every request at once (Config.Concurrency bounds in-flight).
func Unpaced() Pacer { return Pacer{} }

// Recorded replays the trace's timestamps divided by speed (2 = twice as
// fast). speed must be > 0.
func Recorded(speed float64) Pacer { return Pacer{kind: kindRecorded, speed: speed} }

// FixedRate sends rps requests per second, evenly spaced.
func FixedRate(rps float64) Pacer { return Pacer{kind: kindFixed, rate: rps} }

// Poisson sends n requests as a Poisson process of rate rps: the gaps
// between arrivals are exponential with mean 1/rps, drawn from a PCG
// source seeded (seed, stream), so a run is reproducible. Evenly spaced
// arrivals lock to anything periodic in the server (an engine's
// scheduling passes), and a path that adds a constant delay then keeps
// landing on the same side of a pass boundary, which a percentile
// magnifies into whole passes; Poisson arrivals have no phase to lock,
// as independent clients do not (bench frontend).
func Poisson(rps float64, n int, seed, stream uint64) Pacer {
	p := Pacer{kind: kindPoisson, rate: rps, seed: seed, stream: stream, every: 1}
	if !(rps > 0) || n <= 0 {
		return p
	}
	r := rand.New(rand.NewPCG(seed, stream))
	p.times = make([]time.Duration, n)
	var t float64 // seconds
	for i := range p.times {
		t += r.ExpFloat64() / rps
		p.times[i] = time.Duration(t * float64(time.Second))
	}
	return p
}

// Every returns the pacer of requests k, k+m, k+2m, ... of a Poisson
// pacer: m paths offered one process in turn, so their requests
// alternate and the server sees rate rps in all. Other pacers are
// returned unchanged.
func (p Pacer) Every(m, k int) Pacer {
	if p.kind != kindPoisson || m <= 1 {
		return p
	}
	var times []time.Duration
	for i := k; i < len(p.times); i += m {
		times = append(times, p.times[i])
	}
	p.times, p.every = times, p.every*m
	return p
}

// Validate reports a bad speed, rate or jitter.
func (p Pacer) Validate() error {
	switch p.kind {
	case kindRecorded:
		if !(p.speed > 0) {
			return fmt.Errorf("replay: speed %v must be > 0", p.speed)
		}
	case kindFixed, kindPoisson:
		if !(p.rate > 0) {
			return fmt.Errorf("replay: rate %v must be > 0", p.rate)
		}
	}
	return nil
}

// At returns when request i (record rec, first record's timestamp t0) is
// due, relative to the start of the run.
func (p Pacer) At(i int, rec *trace.Record, t0 time.Duration) time.Duration {
	switch p.kind {
	case kindRecorded:
		return time.Duration(float64(rec.Timestamp-t0) / p.speed)
	case kindFixed:
		return time.Duration(float64(i) / p.rate * float64(time.Second))
	case kindPoisson:
		if i < len(p.times) {
			return p.times[i]
		}
		// Past the drawn arrivals (more records than n): the mean gap.
		var last time.Duration
		if len(p.times) > 0 {
			last = p.times[len(p.times)-1]
		}
		return last + time.Duration(float64(i-len(p.times)+1)*float64(p.every)/p.rate*float64(time.Second))
	}
	return 0
}

// String describes the pacer ("unpaced", "recorded x2", "fixed 100/s").
func (p Pacer) String() string {
	switch p.kind {
	case kindRecorded:
		return fmt.Sprintf("recorded x%g", p.speed)
	case kindFixed:
		return fmt.Sprintf("fixed %g/s", p.rate)
	case kindPoisson:
		if p.every > 1 {
			return fmt.Sprintf("poisson %g/s seed %d.%d, 1 in %d", p.rate, p.seed, p.stream, p.every)
		}
		return fmt.Sprintf("poisson %g/s seed %d.%d", p.rate, p.seed, p.stream)
	}
	return "unpaced"
}
