package router

import "time"

// wallClock reports whether now carries no monotonic clock reading (the
// times of a simulation or a replay): now.Sub then takes the difference
// of the wall clocks, whatever the other time carries.
func wallClock(now time.Time) bool { return now == now.Round(0) }

// sinceMs is now.Sub(t) in milliseconds. wall is wallClock(now): Sub
// then takes the wall clocks' difference, which sinceMs computes from
// the two times' seconds and nanoseconds, where Sub checks it by adding
// it back (Time.Add, Equal): ~280 instructions, which timed every busy
// candidate's pass (a quarter of a busy fleet's decision). Seconds
// within 2^62 of 1970 and 2^33 of each other cannot overflow, so Sub's
// check holds and it returns the same Duration; other times (and a now
// with a monotonic reading) go through Sub.
func sinceMs(now, t time.Time, wall bool) float64 {
	if wall {
		ns, ts := now.Unix(), t.Unix()
		if ns > -1<<62 && ns < 1<<62 && ts > -1<<62 && ts < 1<<62 {
			if d := ns - ts; d > -1<<33 && d < 1<<33 {
				return float64(time.Duration(d)*time.Second+time.Duration(now.Nanosecond()-t.Nanosecond())) / float64(time.Millisecond)
			}
		}
	}
	return float64(now.Sub(t)) / float64(time.Millisecond)
}
