package fleet_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/frontend"
)

// serve's timing fit (frontend.Config.TimingFit, on by default) learns a
// real worker's speed: a mocker 8x faster than the DESIGN.md §6
// polynomials (SpeedupRatio 8), fed 40 streamed 2000-token prompts one
// at a time, ends with both fitted scales below 0.8 (moved toward 1/8
// from the prior's 1; the prior's weight keeps 40 observations from
// getting all the way) and above 1/16 (no overshoot), /debug/index shows
// them, and the router prices the worker with the fitted model.
func TestServeTimingFitLearnsFastWorker(t *testing.T) {
	e := start(t, true, 1, 8, nil)
	const n = 40
	for i := range n {
		toks := make([]string, 2000)
		for k := range toks {
			toks[k] = fmt.Sprint((i*7919 + k) % 30000)
		}
		body := `{"model":"kvrouter-mock","prompt":[` + strings.Join(toks, ",") + `],"max_tokens":12,"stream":true}`
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
	id := e.f.Workers()[0].Info().ID
	s, ok := e.f.Frontend().TimingFit(id)
	if !ok || s.TTFTObs != n || s.ITLObs != n {
		t.Fatalf("fit of worker %d: %+v (ok %v), want %d TTFT and ITL observations", id, s, ok, n)
	}
	t.Logf("worker %d: prefill scale %.3f, decode scale %.3f", id, s.PrefillScale, s.DecodeScale)
	for name, v := range map[string]float64{"prefill": s.PrefillScale, "decode": s.DecodeScale} {
		if v >= 0.8 || v <= 1.0/16 {
			t.Errorf("%s scale %v after %d requests on an 8x faster worker, want in (1/16, 0.8)", name, v, n)
		}
	}
	tm, ok := e.f.Frontend().Router().WorkerTiming(id)
	if !ok || tm.PrefillConst >= 16.5*0.8 {
		t.Errorf("router prices worker %d with %+v (ok %v), want the fitted model", id, tm, ok)
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
}
