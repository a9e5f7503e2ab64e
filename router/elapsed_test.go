package router

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestSinceMsMatchesSub checks sinceMs against time.Time.Sub, bit for bit:
// wall-clock times (a simulation's), times with monotonic readings and
// mixes of both, in UTC and a fixed zone, near each other, years apart,
// and at the extremes where Sub saturates.
func TestSinceMsMatchesSub(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 3))
	zone := time.FixedZone("x", 3600)
	mono := time.Now() // carries a monotonic reading
	if wallClock(mono) || !wallClock(mono.Round(0)) {
		t.Fatalf("wallClock: time.Now() %v, its Round(0) %v", wallClock(mono), wallClock(mono.Round(0)))
	}
	random := func() time.Time {
		switch rng.IntN(6) {
		case 0:
			return time.Unix(rng.Int64N(1<<40)-1<<39, rng.Int64N(1e9))
		case 1:
			return time.Unix(0, 0).Add(time.Duration(rng.Int64N(1 << 50)))
		case 2:
			return mono.Add(time.Duration(rng.Int64N(1<<45) - 1<<44))
		case 3:
			return mono.Add(time.Duration(rng.Int64N(1<<45) - 1<<44)).Round(0).In(zone)
		case 4:
			return time.Unix(rng.Int64N(math.MaxInt64)-rng.Int64N(math.MaxInt64), rng.Int64N(1e9))
		default:
			return time.Time{}.Add(time.Duration(rng.Int64N(math.MaxInt64)))
		}
	}
	extremes := []time.Time{{}, time.Unix(1<<62-1, 999999999), time.Unix(-1<<62+1, 0), time.Unix(math.MaxInt64, 0),
		time.Unix(math.MinInt64, 0), mono, mono.Round(0), time.Unix(1<<33, 0), time.Unix(-1<<33, 5)}
	// Internal seconds at the ends of int64, whose difference wraps to a
	// few seconds: Sub saturates.
	const unixToInternal = 62135596800 // seconds from year 1 to 1970
	top, bottom := int64(math.MaxInt64-10), int64(math.MinInt64+5)
	extremes = append(extremes, time.Unix(top-unixToInternal, 0), time.Unix(bottom-unixToInternal, 0))
	check := func(now, at time.Time) {
		got := sinceMs(now, at, wallClock(now))
		want := float64(now.Sub(at)) / float64(time.Millisecond)
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("sinceMs(%v, %v) = %v, now.Sub = %v ms", now, at, got, want)
		}
	}
	for _, a := range extremes {
		for _, b := range extremes {
			check(a, b)
		}
	}
	for range 200000 {
		now, at := random(), random()
		if rng.IntN(2) == 0 {
			at = now.Add(-time.Duration(rng.Int64N(1 << 40)))
		}
		check(now, at)
	}
}
