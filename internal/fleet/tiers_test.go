package fleet_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// TestTiersHostHit runs an up-style fleet (embedded NATS, two mocker
// workers with a host tier, the router with its defaults: cross-tier
// view on) in this process: a prompt served by worker X is evicted from
// X's G1 by other prompts sent to X directly and offloaded to X's host
// tier; the router's /debug/index then shows X's host blocks, /route
// credits X the prompt's blocks as host overlap, and the repeated prompt
// goes to X (X-Kvrouter-Tier-Overlap names the host overlap) where the
// engine onboards it from the host.
func TestTiersHostHit(t *testing.T) {
	eng := mocker.DefaultConfig()
	eng.NumBlocks, eng.BlockSize, eng.SpeedupRatio = 64, 16, 100
	// serve's defaults (cross-tier view on) with the predicted side index
	// off: /route then reads the event-fed indexes alone.
	fc := app.DefaultServeConfig().Frontend
	fc.Seed, fc.LoadPollInterval, fc.DrainTimeout = 1, -1, 5*time.Second
	fc.Router.Predict.TTL = 0
	f, err := fleet.New(fleet.Config{Workers: 2, Engine: eng, Tiers: "host=4x", Frontend: fc,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runFleet(t, f)

	complete := func(base, prompt string) http.Header {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": 1})
		resp, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", base, resp.StatusCode, b)
		}
		return resp.Header
	}
	prompt := longPrompt("alpha", 90)
	h := complete(f.URL(), prompt)
	x, err := strconv.ParseUint(h.Get(frontend.HeaderWorker), 10, 64)
	if err != nil {
		t.Fatalf("worker header %q: %v", h.Get(frontend.HeaderWorker), err)
	}
	var wx *fleet.Worker
	for _, w := range f.Workers() {
		if w.ID == x {
			wx = w
		}
	}
	// Fill X's G1 (64 blocks) with other prompts: the prompt's blocks are
	// evicted and offloaded to the host.
	for _, tag := range []string{"beta", "gamma", "delta", "epsilon"} {
		complete(wx.URL, longPrompt(tag, 90))
	}

	route := func() frontend.RouteResponse {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"prompt": prompt})
		resp, err := http.Post(f.URL()+"/route", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rr frontend.RouteResponse
		if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil || resp.StatusCode != 200 {
			t.Fatalf("/route: %d %v", resp.StatusCode, err)
		}
		return rr
	}
	// Wait on the router's event-fed indexes (a /route would add its own
	// prediction of the device tier): the prompt leaves X's device index
	// and sits whole in its host tier.
	tok, err := tokenizer.Default(tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	toks, err := tok.Encode(t.Context(), prompt)
	if err != nil {
		t.Fatal(err)
	}
	locals := kvhash.LocalHashes(toks, eng.BlockSize, kvhash.Seed("", ""))
	n := len(locals)
	rt := f.Frontend().Router()
	overlap := func(tr kvevents.Tier) int {
		return rt.Index(tr).FindMatches(locals).Get(kvevents.Worker{ID: x})
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for overlap(kvevents.TierDevice) == n || overlap(kvevents.TierHostPinned) < n {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("the prompt's %d blocks never left worker %d's device index (%d) for its host tier (%d)",
				n, x, overlap(kvevents.TierDevice), overlap(kvevents.TierHostPinned))
		}
	}
	rr := route()
	var cx *frontend.Candidate
	for i := range rr.Candidates {
		if rr.Candidates[i].Worker == x {
			cx = &rr.Candidates[i]
		}
	}
	if rr.Blocks != n || cx == nil || cx.TierOverlap["device"] >= n || cx.TierOverlap["host_pinned"] < n || cx.TierCredit["host_pinned"] <= 0 {
		t.Fatalf("/route for %d blocks: worker %d's breakdown %+v", n, x, cx)
	}
	if rr.Worker != x {
		t.Fatalf("/route chose worker %d, want %d (host hit): %+v", rr.Worker, x, rr.Candidates)
	}

	rep := f.Frontend().IndexSummaries()
	found := false
	for _, s := range rep.Workers {
		if s.Worker == x {
			found = s.Blocks["host_pinned"] >= rr.Blocks && s.Reachable["host_pinned"] >= rr.Blocks
		}
	}
	if !found {
		t.Fatalf("/debug/index lacks worker %d's host blocks: %+v", x, rep.Workers)
	}

	before := wx.Server().Stats().OnboardedBlocks
	h = complete(f.URL(), prompt)
	if got := h.Get(frontend.HeaderWorker); got != strconv.FormatUint(x, 10) {
		t.Fatalf("repeat went to worker %s, want %d", got, x)
	}
	tier := h.Get(frontend.HeaderTierOverlap)
	host := -1
	for _, kv := range strings.Split(tier, ",") {
		if v, ok := strings.CutPrefix(kv, "host_pinned="); ok {
			host, _ = strconv.Atoi(v)
		}
	}
	if host < rr.Blocks {
		t.Fatalf("%s: %q, want host_pinned >= %d", frontend.HeaderTierOverlap, tier, rr.Blocks)
	}
	if after := wx.Server().Stats().OnboardedBlocks; after <= before {
		t.Fatalf("worker %d onboarded %d blocks before the repeat and %d after", x, before, after)
	}
}

// TestTiersSharedStore: a fleet whose workers share one G4 store (one
// process, as kvrouter up runs them): a prompt evicted from worker X's G1
// is offloaded to the store, the router's external index holds it under
// the store's identity, /route credits it to every worker, and worker Y,
// which never computed it, onboards it from the store.
func TestTiersSharedStore(t *testing.T) {
	eng := mocker.DefaultConfig()
	eng.NumBlocks, eng.BlockSize, eng.SpeedupRatio = 64, 16, 100
	fc := app.DefaultServeConfig().Frontend
	fc.Seed, fc.LoadPollInterval, fc.DrainTimeout = 1, -1, 5*time.Second
	fc.Router.Predict.TTL = 0
	fc.Router.Selector.SharedWeight = 0.5
	f, err := fleet.New(fleet.Config{Workers: 2, Engine: eng, Tiers: "shared=256", Frontend: fc,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runFleet(t, f)
	x, y := f.Workers()[0], f.Workers()[1]
	prompt := longPrompt("alpha", 90)
	for _, p := range []string{prompt, longPrompt("beta", 90), longPrompt("gamma", 90), longPrompt("delta", 90), longPrompt("epsilon", 90)} {
		postCompletion(t, x.URL, p)
	}
	tok, err := tokenizer.Default(tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	toks, err := tok.Encode(t.Context(), prompt)
	if err != nil {
		t.Fatal(err)
	}
	locals := kvhash.LocalHashes(toks, eng.BlockSize, kvhash.Seed("", ""))
	n := len(locals)
	ext := f.Frontend().Router().Index(kvevents.TierExternal)
	store := kvevents.Worker{ID: mocker.SharedStoreID}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for ext.FindMatches(locals).Get(store) < n {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("the store holds %d of the prompt's %d blocks in the router", ext.FindMatches(locals).Get(store), n)
		}
	}
	body, _ := json.Marshal(map[string]any{"prompt": prompt})
	resp, err := http.Post(f.URL()+"/route", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var rr frontend.RouteResponse
	err = json.NewDecoder(resp.Body).Decode(&rr)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rr.Candidates {
		if c.TierOverlap["external"] < n || c.TierCredit["external"] <= 0 {
			t.Fatalf("worker %d not credited the store's %d blocks: %+v", c.Worker, n, c)
		}
	}
	before := y.Server().Stats()
	postCompletion(t, y.URL, prompt)
	after := y.Server().Stats()
	if after.OnboardedBlocks <= before.OnboardedBlocks || after.TierCachedTokens[kvevents.TierExternal] <= before.TierCachedTokens[kvevents.TierExternal] {
		t.Fatalf("worker %d did not onboard from the store: before %+v after %+v", y.ID, before, after)
	}
}

func postCompletion(t *testing.T, base, prompt string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": 1})
	resp, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", base, resp.StatusCode, b)
	}
}
