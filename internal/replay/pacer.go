package replay

import (
	"fmt"
	"time"

	"github.com/kvrouter/kvrouter/trace"
)

type pacerKind uint8

const (
	kindUnpaced pacerKind = iota
	kindRecorded
	kindFixed
	kindJittered
)

// Pacer says when each request is sent. The zero value is Unpaced.
type Pacer struct {
	kind  pacerKind
	speed float64 // Recorded: timestamps are divided by speed
	rate  float64 // FixedRate, Jittered: requests per second
	// Jittered: each request's offset is in [0, jitter), from seed.
	jitter time.Duration
	seed   uint64
}

// Unpaced sends every request at once (Config.Concurrency bounds in-flight).
func Unpaced() Pacer { return Pacer{} }

// Recorded replays the trace's timestamps divided by speed (2 = twice as
// fast). speed must be > 0.
func Recorded(speed float64) Pacer { return Pacer{kind: kindRecorded, speed: speed} }

// FixedRate sends rps requests per second, evenly spaced.
func FixedRate(rps float64) Pacer { return Pacer{kind: kindFixed, rate: rps} }

// Jittered sends rps requests per second, request i at a pseudo-random
// point (from seed) of [i/rps, i/rps + jitter). The rate stays rps, but
// the arrivals' phase against anything periodic in the server is random:
// an engine's scheduling passes lock to evenly spaced arrivals, and a
// path that adds a constant delay then keeps landing on the same side of
// a pass boundary, which a percentile magnifies into whole passes
// (bench frontend --jitter).
func Jittered(rps float64, jitter time.Duration, seed uint64) Pacer {
	return Pacer{kind: kindJittered, rate: rps, jitter: jitter, seed: seed}
}

// Validate reports a bad speed, rate or jitter.
func (p Pacer) Validate() error {
	switch p.kind {
	case kindRecorded:
		if !(p.speed > 0) {
			return fmt.Errorf("replay: speed %v must be > 0", p.speed)
		}
	case kindFixed, kindJittered:
		if !(p.rate > 0) {
			return fmt.Errorf("replay: rate %v must be > 0", p.rate)
		}
		if p.jitter < 0 {
			return fmt.Errorf("replay: jitter %v must be >= 0", p.jitter)
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
	case kindJittered:
		u := float64(splitmix64(p.seed+uint64(i))>>11) / (1 << 53) // [0, 1)
		return time.Duration(float64(i)/p.rate*float64(time.Second) + u*float64(p.jitter))
	}
	return 0
}

// splitmix64 is one output of the SplitMix64 generator at state x: a
// stateless hash, so At stays a pure function of i.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// String describes the pacer ("unpaced", "recorded x2", "fixed 100/s").
func (p Pacer) String() string {
	switch p.kind {
	case kindRecorded:
		return fmt.Sprintf("recorded x%g", p.speed)
	case kindFixed:
		return fmt.Sprintf("fixed %g/s", p.rate)
	case kindJittered:
		return fmt.Sprintf("fixed %g/s jitter %v", p.rate, p.jitter)
	}
	return "unpaced"
}
