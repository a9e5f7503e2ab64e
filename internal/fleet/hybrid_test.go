package fleet_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/mocker"
)

// TestHybridOverlapIsCached runs 2 hybrid mockers (a sliding-window or
// Mamba group beside full attention) behind the frontend over NATS
// (DESIGN.md §13): for every request, the overlap the router credited
// (X-Kvrouter-Overlap-Blocks, the joint match) times the block size is
// exactly the worker's usage.prompt_tokens_details.cached_tokens, while
// the /route breakdown shows the full-attention group alone holding more
// (what a group-blind router credits) on some of them, and /debug/index
// shows the worker's group blocks. Each request is preceded by an
// untracked /route of the same prompt, which leaves a prediction the
// router must not credit on a hybrid worker.
func TestHybridOverlapIsCached(t *testing.T) {
	for _, h := range []mocker.HybridConfig{
		// A sliding group of 40 blocks (window 128 tokens = 8 blocks, 16
		// tokens per pass chunk): a long prompt's early window blocks are
		// evicted before the prompt ends.
		{Kind: mocker.HybridSWA, GroupFraction: 40.0 / 4096},
		{Kind: mocker.HybridMamba, StateInterval: 4},
	} {
		t.Run(string(h.Kind), func(t *testing.T) { hybridOverlapIsCached(t, h) })
	}
}

func hybridOverlapIsCached(t *testing.T, h mocker.HybridConfig) {
	const B = 16
	var applied atomic.Uint64
	e := startFleet(t, false, 2, 100, func(c *frontend.Config) {
		c.Events.OnEvent = func(uint64, error) { applied.Add(1) }
		c.Router.TierChains = true // serve's and up's default
	}, func(c *fleet.Config) {
		c.Engine.Hybrid = h
		c.Engine.MaxNumBatchedTokens = 256
	})
	// synced waits until the router applied every event the workers
	// published: its index is their caches.
	synced := func() {
		t.Helper()
		eventplanetest.WaitFor(t, 20*time.Second, "events applied", func() bool {
			var published uint64
			for _, w := range e.f.Workers() {
				published += w.Server().LoadReport().EventsPublished
			}
			return applied.Load() == published
		})
	}
	shared := longPrompt("shared", 200)
	first := shared + longPrompt("first-tail", 200)
	prompts := []string{
		shared + longPrompt("other-tail", 20),
		first[:len(first)*9/10] + " different end",
		first[:len(first)/3] + " a third",
		shared + longPrompt("other-tail", 20),
	}
	complete(t, e, first)
	limited := 0
	for i, p := range prompts {
		synced()
		rr := routeDry(t, e, p)
		if rr.Groups == nil {
			t.Fatalf("prompt %d: /route has no group breakdown for the hybrid worker: %+v", i, rr)
		}
		g := rr.Groups
		if g.Joint != rr.OverlapBlocks[0] || g.Joint > g.Full {
			t.Errorf("prompt %d: /route overlap %d, groups %+v", i, rr.OverlapBlocks[0], g)
		}
		if g.Full > g.Joint {
			limited++
		}
		overlap, cached, tokens := complete(t, e, p)
		t.Logf("%s prompt %d: %d tokens, full attention %d blocks, joint %d (limited by %q), header %d blocks, cached %d tokens",
			h.Kind, i, tokens, g.Full, g.Joint, g.LimitedBy, overlap, cached)
		if overlap*B != cached {
			t.Errorf("prompt %d: the router credited %d blocks (%d tokens), the worker cached %d tokens", i, overlap, overlap*B, cached)
		}
		if overlap != g.Joint {
			t.Errorf("prompt %d: header %d blocks, /route joint %d just before", i, overlap, g.Joint)
		}
	}
	if limited == 0 {
		t.Errorf("%s: full attention never held more than the joint match: a full-only router would not over-state", h.Kind)
	}
	synced()
	rep := e.f.Frontend().IndexSummaries()
	var groups []frontend.GroupBlocks
	for _, x := range rep.Workers {
		groups = append(groups, x.Groups...)
	}
	if len(groups) != 1 || !strings.HasPrefix(groups[0].Group, "g1:") || groups[0].Blocks == 0 {
		t.Errorf("/debug/index groups %+v: want one non-empty group g1", groups)
	}
}

// complete sends one completion and returns the overlap header, the
// cached tokens and the prompt tokens it reports.
func complete(t *testing.T, e *env, prompt string) (overlap, cached, tokens int) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": 2})
	resp, err := http.Post(e.f.URL()+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Usage struct {
			Prompt  int `json:"prompt_tokens"`
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("completion: %d %v", resp.StatusCode, err)
	}
	overlap, err = strconv.Atoi(resp.Header.Get(frontend.HeaderOverlap))
	if err != nil {
		t.Fatalf("overlap header %q: %v", resp.Header.Get(frontend.HeaderOverlap), err)
	}
	return overlap, c.Usage.Details.Cached, c.Usage.Prompt
}

// routeDry asks POST /route (untracked: nothing is held) for prompt.
func routeDry(t *testing.T, e *env, prompt string) frontend.RouteResponse {
	t.Helper()
	body := fmt.Sprintf(`{"prompt":%q}`, prompt)
	resp, err := http.Post(e.f.URL()+"/route", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rr frontend.RouteResponse
	if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/route: %d %v", resp.StatusCode, err)
	}
	return rr
}
