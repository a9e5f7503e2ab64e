package fleet_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/selector"
)

// serve's timing fit (frontend.Config.TimingFit, on by default) learns
// each worker's speed from the latencies it proxies: a mocker 8x faster
// than the DESIGN.md §6 polynomials and one 2x slower, in two fleets fed
// the same 40 streamed 2000-token prompts in alternation, end with the
// fast worker's prefill and decode scales below 3/4 of the slow one's
// (unloaded about 0.6 against 1.5; the prior's weight keeps 40
// observations from getting all the way). The wall clock enters only as
// a ratio between two workers measured side by side: a loaded machine
// adds the same overhead to both, which the 16x gap in modeled speed
// leaves far inside the margin (an absolute bound on the fast scale
// failed at load 25). Every request is observed, the router prices each
// worker with exactly its fitted model and /debug/index shows it, so the
// test fails when the fit is not wired into serve.
func TestServeTimingFitLearnsFastWorker(t *testing.T) {
	fast, slow := start(t, true, 1, 8, nil), start(t, true, 1, 0.5, nil)
	const n = 40
	for i := range n {
		toks := make([]string, 2000)
		for k := range toks {
			toks[k] = fmt.Sprint((i*7919 + k) % 30000)
		}
		body := `{"model":"kvrouter-mock","prompt":[` + strings.Join(toks, ",") + `],"max_tokens":12,"stream":true}`
		for _, e := range []*env{fast, slow} {
			resp, err := http.Post(e.f.URL()+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("request %d: status %d, err %v: %s", i, resp.StatusCode, err, b)
			}
		}
	}
	fs, ss := fittedTiming(t, fast, n), fittedTiming(t, slow, n)
	t.Logf("fast worker: prefill scale %.3f, decode scale %.3f; slow worker: %.3f, %.3f",
		fs.PrefillScale, fs.DecodeScale, ss.PrefillScale, ss.DecodeScale)
	if !(fs.PrefillScale < 0.75*ss.PrefillScale) || !(fs.DecodeScale < 0.75*ss.DecodeScale) {
		t.Errorf("fitted scales: 8x worker %+v, 0.5x worker %+v; want the fast one's prefill and decode scales below 3/4 of the slow one's",
			fs, ss)
	}
	if fs.PrefillScale <= 1.0/16 || fs.DecodeScale <= 1.0/16 {
		t.Errorf("fast worker's scales %+v overshoot 1/8 by half", fs)
	}
}

// fittedTiming returns the timing fit of e's only worker after n
// requests, checking that each gave a TTFT and an ITL observation, that
// the router prices the worker with the fitted model (the prior's
// polynomials times the scales), and that /debug/index shows it.
func fittedTiming(t *testing.T, e *env, n int) frontend.TimingSummary {
	t.Helper()
	id := e.f.Workers()[0].Info().ID
	s, ok := e.f.Frontend().TimingFit(id)
	if !ok || s.TTFTObs != n || s.ITLObs != n {
		t.Fatalf("fit of worker %d: %+v (ok %v), want %d TTFT and ITL observations", id, s, ok, n)
	}
	prior := selector.DefaultTiming()
	tm, ok := e.f.Frontend().Router().WorkerTiming(id)
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }
	if !ok || !near(tm.PrefillConst, prior.PrefillConst*s.PrefillScale) || !near(tm.DecodeConst, prior.DecodeConst*s.DecodeScale) {
		t.Errorf("router prices worker %d with %+v (ok %v), want the prior scaled by the fit %+v", id, tm, ok, s)
	}
	resp, err := http.Get(e.f.URL() + "/debug/index")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep frontend.IndexReport
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Workers) == 0 || rep.Workers[0].Timing == nil || *rep.Workers[0].Timing != s {
		t.Fatalf("/debug/index workers %+v, want worker %d's timing %+v", rep.Workers, id, s)
	}
	return s
}
