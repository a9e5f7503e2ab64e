package fleet_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
)

// TestPeerKVHintLive runs two real mockers behind the frontend over HTTP:
// worker 1 computes a prompt, then the same prompt is pinned to worker 2.
// With peer-kv-hints the frontend hands worker 2 the hint (header and
// kv_transfer_params naming worker 1), and worker 2 pulls the blocks over
// its KV link: it reports them as cached tokens. With the feature off
// (the default) worker 2 computes the whole prompt.
// The router counts the hint sent and, from the mocker's transfer
// trailer, pulled (kvrouter_peer_hints_total).
func TestPeerKVHintLive(t *testing.T) {
	off, offMetrics := peerHintCached(t, false)
	on, onMetrics := peerHintCached(t, true)
	t.Logf("worker 2's cached tokens: hints off %d, on %d", off, on)
	if off != 0 {
		t.Fatalf("feature off: worker 2 reports %d cached tokens, want 0", off)
	}
	if on < 16*8 {
		t.Fatalf("feature on: worker 2 reports %d cached tokens, want at least the peer's %d", on, 16*8)
	}
	for _, o := range []string{"sent", "pulled"} {
		line := `kvrouter_peer_hints_total{outcome="` + o + `"} `
		if !strings.Contains(offMetrics, line+"0\n") || !strings.Contains(onMetrics, line+"1\n") {
			t.Fatalf("%s: want 0 with the feature off and 1 with it on; off:\n%s\non:\n%s", o, grepLines(offMetrics, line), grepLines(onMetrics, line))
		}
	}
}

// grepLines returns the lines of text holding s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// peerHintCached returns the cached tokens worker 2 reports for a prompt
// worker 1 computed first, and the router's metrics after.
func peerHintCached(t *testing.T, hints bool) (int, string) {
	t.Helper()
	eng := mocker.DefaultConfig()
	eng.NumBlocks, eng.BlockSize, eng.SpeedupRatio = 4096, 16, 0
	fc := frontend.DefaultConfig()
	fc.Seed, fc.LoadPollInterval, fc.DrainTimeout = 1, -1, 5*time.Second
	if hints {
		fc.Router.EnableFeature = []string{router.FeaturePeerKVHints}
	}
	f, err := fleet.New(fleet.Config{Workers: 2, Engine: eng, Frontend: fc, Direct: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runFleet(t, f)
	prompt := strings.Repeat("the peer holds this long shared prefix of many tokens. ", 40)
	ask := func(pin string) (worker string, cached int) {
		t.Helper()
		body := fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":2}`, model, prompt)
		req, _ := http.NewRequest(http.MethodPost, f.URL()+"/v1/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(frontend.HeaderPinWorker, pin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		cached = cachedTokens(t, resp, "pin "+pin)
		return resp.Header.Get(frontend.HeaderWorker), cached
	}
	if w, _ := ask("1"); w != "1" {
		t.Fatalf("pinned to 1, served by %q", w)
	}
	// Worker 1's Stored events reach the index asynchronously.
	idx := f.Frontend().Router().Index(kvevents.TierDevice)
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for idx.Stats().Blocks < 8 {
		select {
		case <-deadline.C:
			t.Fatalf("worker 1's blocks never indexed: %+v", idx.Stats())
		case <-tick.C:
		}
	}
	w, cached := ask("2")
	if w != "2" {
		t.Fatalf("pinned to 2, served by %q", w)
	}
	resp, err := http.Get(f.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	return cached, string(m)
}

// cachedTokens reads a completion answer's usage (closing resp) and
// returns its cached prompt tokens; what names the request in failures.
func cachedTokens(t *testing.T, resp *http.Response, what string) int {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var c struct {
		Usage struct {
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &c) != nil {
		t.Fatalf("%s: %d %s", what, resp.StatusCode, b)
	}
	return c.Usage.Details.Cached
}
