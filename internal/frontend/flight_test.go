package frontend

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
)

// flightLog records a flight's calls on its tracker and observer, in order.
type flightLog struct {
	calls []string
	start time.Time
}

func (l *flightLog) at(now time.Time) string { return now.Sub(l.start).String() }

func (l *flightLog) PrefillDone(id string, now time.Time) error {
	l.calls = append(l.calls, "PrefillDone "+id+" @"+l.at(now))
	return nil
}

func (l *flightLog) Touch(id string, now time.Time) error {
	l.calls = append(l.calls, "Touch "+id+" @"+l.at(now))
	return nil
}

func (l *flightLog) Free(id string, now time.Time) error {
	l.calls = append(l.calls, "Free "+id+" @"+l.at(now))
	return nil
}

func (l *flightLog) Fail(id string, now time.Time) error {
	l.calls = append(l.calls, "Fail "+id+" @"+l.at(now))
	return nil
}

func (l *flightLog) firstToken(ttft time.Duration) {
	l.calls = append(l.calls, "ttft "+ttft.String())
}

func (l *flightLog) usage(u usage) {
	l.calls = append(l.calls, fmt.Sprintf("usage prompt=%d cached=%d completion=%d", u.prompt, u.cached, u.completion))
}

func (l *flightLog) landed(x *landing) {
	fit := "none"
	if x.fit != nil && !x.fit.first.IsZero() {
		fit = fmt.Sprintf("ttft=%s gaps=%d", x.fit.first.Sub(x.fit.dispatched), len(x.fit.gaps))
	}
	check := "none"
	if c := x.check; c != nil {
		check = fmt.Sprintf("overlap=%d isl=%d prompt=%d cached=%d", c.overlapBlocks, c.isl, c.reportedPrompt, c.cached)
	}
	l.calls = append(l.calls, fmt.Sprintf("landed %s worker=%d status=%s outcome=%s elapsed=%s output=%d fit=%s check=%s",
		x.endpoint, x.worker, x.status, x.outcome, x.elapsed, x.output, fit, check))
}

var (
	_ tracker        = (*flightLog)(nil)
	_ flightObserver = (*flightLog)(nil)
)

// runFlight plays script (one event a line) on a flight of request "r1"
// routed to worker 3 with a 2-block overlap of a 40-token prompt, the
// client's request arriving at 0 and its dispatch at 1ms; it returns the
// calls the flight made.
//
//	answered STATUS      the worker's headers
//	token                a streamed output event
//	usage P C O          a streamed usage-only event (prompt, cached, completion)
//	role                 a streamed event with no output (an empty choices list)
//	body P C O           a whole JSON answer with that usage
//	long                 a JSON answer too long to read its usage
//	fail OUTCOME         the relay's outcome
//	chunk                answer bytes that are no whole event (Picked)
//	nocheck | unread     Pick's flags: no prediction check; answer not read through
//	land | abort         the end
//	wait DURATION        time passes
func runFlight(t *testing.T, script string) []string {
	t.Helper()
	t0 := time.Unix(1000, 0)
	log := &flightLog{start: t0}
	d := &router.Decision{ISL: 40}
	d.Worker.ID = 3
	d.Overlap[kvevents.TierDevice] = 2
	fit := &fitObs{worker: 3, dispatched: t0.Add(time.Millisecond)}
	j := &job{id: "r1", endpoint: EndpointCompletions, model: "m", start: t0}
	f := newFlight(j, d, fit, log, log)
	now := t0.Add(time.Millisecond)
	for _, line := range strings.Split(strings.TrimSpace(script), "\n") {
		flightStep(t, f, &now, line)
	}
	return log.calls
}

// flightStep plays one line of runFlight's script on f at *now.
func flightStep(t *testing.T, f *flight, now *time.Time, line string) {
	t.Helper()
	args := strings.Fields(line)
	num := func(i int) int {
		n, err := strconv.Atoi(args[i])
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		return n
	}
	usageJSON := func() []byte {
		return fmt.Appendf(nil, `{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`,
			num(1), num(3), num(2))
	}
	switch args[0] {
	case "answered":
		f.answered(num(1), *now)
	case "token":
		f.data(*now, []byte(`{"choices":[{"index":0,"text":"x"}]}`))
	case "role":
		f.data(*now, []byte(`{"choices":[]}`))
	case "usage":
		f.data(*now, usageJSON())
	case "body":
		f.body(*now, usageJSON())
	case "long":
		f.body(*now, nil)
	case "fail":
		f.fail(args[1])
	case "chunk":
		f.chunk(*now)
	case "nocheck":
		f.noCheck = true
	case "unread":
		f.unread = true
	case "land":
		f.land(*now)
	case "abort":
		f.abort(*now)
	case "wait":
		dur, err := time.ParseDuration(args[1])
		if err != nil {
			t.Fatal(err)
		}
		*now = now.Add(dur)
	default:
		t.Fatalf("unknown step %q", line)
	}
}

// TestFlight drives a request's flight through event sequences, without
// HTTP, and checks every call it makes on the router's load tracker and
// the frontend's observers: Free or Fail exactly once, PrefillDone at the
// first streamed event, and samples (TTFT, timing fit, output length,
// prediction check) only from what the request really did.
func TestFlight(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   []string
	}{{
		name: "stream ok",
		script: `
answered 200
wait 9ms
token
wait 2ms
token
wait 1ms
usage 40 32 2
land`,
		want: []string{
			"PrefillDone r1 @10ms", "ttft 10ms",
			"usage prompt=40 cached=32 completion=2",
			"Free r1 @13ms",
			"landed completions worker=3 status=200 outcome=ok elapsed=13ms output=2 fit=ttft=9ms gaps=1 check=overlap=2 isl=40 prompt=40 cached=32",
		},
	}, {
		name: "error before first token frees once, no TTFT sample",
		script: `
answered 200
wait 5ms
fail upstream_error
land`,
		want: []string{
			"Free r1 @6ms",
			"landed completions worker=3 status=200 outcome=upstream_error elapsed=6ms output=0 fit=none check=none",
		},
	}, {
		name: "cancel after first token",
		script: `
answered 200
wait 4ms
token
wait 1ms
usage 40 8 9
fail client_gone
land`,
		want: []string{
			"PrefillDone r1 @5ms", "ttft 5ms",
			"usage prompt=40 cached=8 completion=9",
			"Free r1 @6ms",
			"landed completions worker=3 status=200 outcome=client_gone elapsed=6ms output=0 fit=none check=none",
		},
	}, {
		name: "double end frees once",
		script: `
answered 200
token
land
wait 1ms
land
abort`,
		want: []string{
			"PrefillDone r1 @1ms", "ttft 1ms",
			"Free r1 @1ms",
			"landed completions worker=3 status=200 outcome=ok elapsed=1ms output=1 fit=ttft=0s gaps=0 check=none",
		},
	}, {
		name: "events after the end are ignored",
		script: `
answered 200
land
token
body 1 1 1`,
		want: []string{
			"Free r1 @1ms",
			"landed completions worker=3 status=200 outcome=ok elapsed=1ms output=0 fit=none check=none",
		},
	}, {
		name: "never reached its worker: Fail once, no report",
		script: `
abort
abort
land`,
		want: []string{"Fail r1 @1ms"},
	}, {
		name: "worker error",
		script: `
answered 503
fail worker_error
land`,
		want: []string{
			"Free r1 @1ms",
			"landed completions worker=3 status=503 outcome=worker_error elapsed=1ms output=0 fit=none check=none",
		},
	}, {
		name: "slow client",
		script: `
answered 200
token
fail client_slow
land`,
		want: []string{
			"PrefillDone r1 @1ms", "ttft 1ms",
			"Free r1 @1ms",
			"landed completions worker=3 status=200 outcome=client_slow elapsed=1ms output=0 fit=none check=none",
		},
	}, {
		name: "JSON answer: PrefillDone without a TTFT sample, usage read",
		script: `
answered 200
wait 20ms
body 40 16 7
land`,
		want: []string{
			"PrefillDone r1 @21ms",
			"usage prompt=40 cached=16 completion=7",
			"Free r1 @21ms",
			"landed completions worker=3 status=200 outcome=ok elapsed=21ms output=7 fit=none check=overlap=2 isl=40 prompt=40 cached=16",
		},
	}, {
		name: "JSON answer too long: its usage is not read",
		script: `
answered 200
long
land`,
		want: []string{
			"PrefillDone r1 @1ms",
			"Free r1 @1ms",
			"landed completions worker=3 status=200 outcome=ok elapsed=1ms output=0 fit=none check=none",
		},
	}, {
		name: "a long stream touches its booking at most once a second",
		script: `
answered 200
token
wait 600ms
token
wait 600ms
token
wait 500ms
token
wait 501ms
token
land`,
		want: []string{
			"PrefillDone r1 @1ms", "ttft 1ms",
			"Touch r1 @1.201s",
			"Touch r1 @2.202s",
			"Free r1 @2.202s",
			"landed completions worker=3 status=200 outcome=ok elapsed=2.202s output=5 fit=ttft=0s gaps=4 check=none",
		},
	}, {
		name: "the first event prefills even with no output; usage overrides counted tokens",
		script: `
answered 200
role
token
token
usage 40 0 5
land`,
		want: []string{
			"PrefillDone r1 @1ms", "ttft 1ms",
			"usage prompt=40 cached=0 completion=5",
			"Free r1 @1ms",
			"landed completions worker=3 status=200 outcome=ok elapsed=1ms output=5 fit=ttft=0s gaps=1 check=overlap=2 isl=40 prompt=40 cached=0",
		},
	}, {
		name: "a pick: the first chunk prefills, no prediction check",
		script: `
nocheck
answered 200
wait 3ms
chunk
wait 1100ms
chunk
usage 40 32 1
land`,
		want: []string{
			"PrefillDone r1 @4ms", "ttft 4ms",
			"Touch r1 @1.104s",
			"usage prompt=40 cached=32 completion=1",
			"Free r1 @1.104s",
			"landed completions worker=3 status=200 outcome=ok elapsed=1.104s output=1 fit=none check=none",
		},
	}, {
		name: "an answer not read through teaches nothing",
		script: `
unread
answered 200
token
token
land`,
		want: []string{
			"PrefillDone r1 @1ms", "ttft 1ms",
			"Free r1 @1ms",
			"landed completions worker=3 status=200 outcome=ok elapsed=1ms output=0 fit=none check=none",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := runFlight(t, tc.script)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("calls:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}
