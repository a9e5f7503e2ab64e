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
)

// Pacer says when each request is sent. The zero value is Unpaced.
type Pacer struct {
	kind  pacerKind
	speed float64 // Recorded: timestamps are divided by speed
	rate  float64 // FixedRate: requests per second
}

// Unpaced sends every request at once (Config.Concurrency bounds in-flight).
func Unpaced() Pacer { return Pacer{} }

// Recorded replays the trace's timestamps divided by speed (2 = twice as
// fast). speed must be > 0.
func Recorded(speed float64) Pacer { return Pacer{kind: kindRecorded, speed: speed} }

// FixedRate sends rps requests per second, evenly spaced.
func FixedRate(rps float64) Pacer { return Pacer{kind: kindFixed, rate: rps} }

// Validate reports a bad speed or rate.
func (p Pacer) Validate() error {
	switch p.kind {
	case kindRecorded:
		if !(p.speed > 0) {
			return fmt.Errorf("replay: speed %v must be > 0", p.speed)
		}
	case kindFixed:
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
	}
	return "unpaced"
}
