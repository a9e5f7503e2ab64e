package frontend

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
)

// runHops plays script (one event a line) on the two bookings of a
// disaggregated request "r1": its prefill hold ("r1/prefill") and, once
// routed, its decode flight ("r1", worker 3), the client's request
// arriving at 0. It returns the calls both made, a kick of the release
// loop written "kick".
//
//	prefill free | fail | drop   the prefill answered | failed | was never sent
//	decode                       the decode hop was routed (its flight starts)
//	wait DURATION                time passes
//	anything else                a step of the decode flight (runFlight)
func runHops(t *testing.T, script string) []string {
	t.Helper()
	t0 := time.Unix(1000, 0)
	log := &flightLog{start: t0}
	h := newHold(prefillID("r1"), log, func() { log.calls = append(log.calls, "kick") })
	pre := &prefilled{h: h}
	j := &job{id: "r1", endpoint: EndpointCompletions, model: "m", start: t0}
	var f *flight
	now := t0
	for _, line := range strings.Split(strings.TrimSpace(script), "\n") {
		args := strings.Fields(line)
		switch args[0] {
		case "prefill":
			switch args[1] {
			case "free":
				h.free(now)
			case "fail":
				h.fail(now)
			case "drop":
				pre.drop(now)
			}
		case "decode":
			d := &router.Decision{ISL: 40}
			d.Worker.ID = 3
			f = newFlight(j, d, nil, log, log)
		default:
			if f == nil && args[0] != "wait" {
				t.Fatalf("%q before decode", line)
			}
			flightStep(t, f, &now, line)
		}
	}
	return log.calls
}

// TestPrefillHold drives a disaggregated request's two bookings through
// event sequences, without HTTP: the prefill booking is released exactly
// once whatever ends it (and wakes the queue), and the decode hop's
// booking is a flight of its own.
func TestPrefillHold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   []string
	}{{
		name: "decode after prefill",
		script: `
wait 3ms
prefill free
decode
answered 200
wait 2ms
token
wait 1ms
land`,
		want: []string{"Free r1/prefill @3ms", "kick", "PrefillDone r1 @5ms", "ttft 5ms", "Free r1 @6ms",
			"landed completions worker=3 status=200 outcome=ok elapsed=6ms output=1 fit=none check=none"},
	}, {
		name: "prefill error frees the prefill booking once",
		script: `
wait 2ms
prefill fail
wait 1ms
prefill fail
prefill free
prefill drop`,
		want: []string{"Fail r1/prefill @2ms", "kick"},
	}, {
		name: "cancel between hops: the unsent SGLang prefill is dropped, its late end is a no-op",
		script: `
wait 1ms
decode
prefill drop
abort
wait 1ms
prefill fail`,
		want: []string{"Fail r1/prefill @1ms", "kick", "Fail r1 @1ms"},
	}, {
		name: "a vLLM prefill already answered: dropping it is a no-op",
		script: `
prefill free
decode
prefill drop
abort`,
		want: []string{"Free r1/prefill @0s", "kick", "Fail r1 @0s"},
	}, {
		name: "SGLang prefill ends after the decode answered",
		script: `
decode
answered 200
wait 1ms
token
wait 1ms
prefill free
land`,
		want: []string{"PrefillDone r1 @1ms", "ttft 1ms", "Free r1/prefill @2ms", "kick", "Free r1 @2ms",
			"landed completions worker=3 status=200 outcome=ok elapsed=2ms output=1 fit=none check=none"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runHops(t, tc.script); !slices.Equal(got, tc.want) {
				t.Errorf("calls:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// countTracker counts Free and Fail calls; safe for concurrent use.
type countTracker struct {
	mu         sync.Mutex
	free, fail int
}

func (c *countTracker) PrefillDone(string, time.Time) error { return nil }
func (c *countTracker) Touch(string, time.Time) error       { return nil }
func (c *countTracker) Free(string, time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.free++
	return nil
}
func (c *countTracker) Fail(string, time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail++
	return nil
}

// TestPrefillHoldRace: the SGLang prefill's goroutine and the decode hop
// end the same hold at once; exactly one release reaches the router
// (run with -race).
func TestPrefillHoldRace(t *testing.T) {
	for range 50 {
		c := &countTracker{}
		var kicks sync.WaitGroup
		h := newHold("r1/prefill", c, func() { kicks.Done() })
		kicks.Add(1)
		var wg sync.WaitGroup
		released := make(chan bool, 2)
		wg.Add(2)
		go func() { defer wg.Done(); released <- h.free(time.Now()) }()
		go func() { defer wg.Done(); released <- h.fail(time.Now()) }()
		wg.Wait()
		kicks.Wait()
		close(released)
		n := 0
		for r := range released {
			if r {
				n++
			}
		}
		if n != 1 || c.free+c.fail != 1 {
			t.Fatalf("releases reported %d, Free %d + Fail %d; want exactly one", n, c.free, c.fail)
		}
	}
}
