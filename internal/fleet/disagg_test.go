package fleet_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
)

// TestDisaggFleetFaults runs a 2:2 fleet of real mockers (policy always)
// and kills workers one by one: while a prefill worker lives, requests take
// two hops (the dead one is retried away from); with the prefill pool gone
// they run aggregated on a decode worker; every request gets a complete
// answer.
func TestDisaggFleetFaults(t *testing.T) {
	eng := mocker.DefaultConfig()
	eng.NumBlocks, eng.BlockSize, eng.SpeedupRatio = 4096, 16, 0
	fc := frontend.DefaultConfig()
	fc.Seed, fc.LoadPollInterval, fc.DrainTimeout = 1, -1, 5*time.Second
	fc.Router.Disagg.Policy = router.DisaggAlways
	f, err := fleet.New(fleet.Config{Prefill: 2, Decode: 2, Engine: eng, Frontend: fc, Direct: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runFleet(t, f)
	if p, d := f.Pools(); p != 2 || d != 2 {
		t.Fatalf("pools %d:%d", p, d)
	}
	ask := func(i int) (prefill, decode string, cached int) {
		t.Helper()
		body := fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":4}`, model, strings.Repeat(fmt.Sprintf("request %d talks about caches. ", i), 12))
		resp, err := http.Post(f.URL()+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		cached = cachedTokens(t, resp, fmt.Sprintf("request %d", i))
		return resp.Header.Get(frontend.HeaderPrefillWorker), resp.Header.Get(frontend.HeaderWorker), cached
	}
	for i := range 4 {
		p, d, cached := ask(i)
		if (p != "1" && p != "2") || (d != "3" && d != "4") || cached < 16 {
			t.Fatalf("request %d: prefill %q decode %q cached %d", i, p, d, cached)
		}
	}
	f.KillWorker(0) // prefill worker 1
	for i := 10; i < 16; i++ {
		if p, d, _ := ask(i); p != "2" || (d != "3" && d != "4") {
			t.Fatalf("after killing prefill 1, request %d: prefill %q decode %q", i, p, d)
		}
	}
	f.KillWorker(1) // prefill worker 2: the prefill pool is gone
	for i := 20; i < 24; i++ {
		if p, d, _ := ask(i); p != "" || (d != "3" && d != "4") {
			t.Fatalf("without prefill pool, request %d: prefill %q decode %q", i, p, d)
		}
	}
	if st := f.Frontend().Router().Stats(); st.Active != 0 {
		t.Fatalf("load left: %+v", st)
	}
}
