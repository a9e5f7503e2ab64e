package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/frontend"
)

// TestServeCacheSaltTenants runs serve and two mockers on one NATS. Tenant
// A's prompt (cache_salt "tenant-a" in the body) is served and cached;
// then the router credits its blocks to a request with the same salt
// (body field or HeaderCacheSalt) only, never to tenant B's salt nor to an
// unsalted request. Sent to the same worker, tenant B (salt by header,
// written into the forwarded body) is a full miss on the engine as well,
// and tenant A a hit: the mocker salts its blocks as vLLM does.
func TestServeCacheSaltTenants(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nats := eventplanetest.Embedded(t)

	cfg := DefaultServeConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.NATS.URL = nats.ClientURL()
	cfg.Frontend.LoadPollInterval = -1
	cfg.Logger = quiet
	s := runServe(t, ctx, "serve", cfg)
	var done []chan error
	defer func() {
		cancel()
		for _, d := range done {
			<-d
		}
	}()
	for _, id := range []uint64{1, 2} {
		mc := DefaultMockerConfig()
		mc.Listen = "127.0.0.1:0"
		mc.WorkerID = id
		mc.NATS.URL = nats.ClientURL()
		mc.Mocker.Engine.SpeedupRatio = 0
		mc.Logger = quiet
		m, err := NewMocker(mc)
		if err != nil {
			t.Fatal(err)
		}
		d := make(chan error, 1)
		go func() { d <- m.Run(ctx) }()
		done = append(done, d)
	}
	waitUntil(t, 20*time.Second, "both mockers to join", func() (bool, string) {
		n := len(s.Frontend().Router().Workers())
		return n == 2, fmt.Sprintf("%d workers", n)
	})

	const blocks = 4
	prompt := make([]uint32, blocks*DefaultBlockSize)
	for i := range prompt {
		prompt[i] = uint32(100 + i)
	}
	complete := func(body map[string]any, hdr http.Header) (int, map[string]any) {
		t.Helper()
		body["model"], body["prompt"], body["max_tokens"] = DefaultModel, prompt, 1
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/completions", bytes.NewReader(b))
		req.Header = hdr
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	routeOverlap := func(body map[string]any, hdr http.Header) map[uint64]int {
		t.Helper()
		body["tokens"] = prompt
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/route", bytes.NewReader(b))
		req.Header = hdr
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rr frontend.RouteResponse
		if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST /route: %d %v", resp.StatusCode, err)
		}
		out := map[uint64]int{}
		for _, c := range rr.Candidates {
			out[c.Worker] = c.Overlap[0]
		}
		return out
	}
	cached := func(out map[string]any) float64 {
		u, _ := out["usage"].(map[string]any)
		d, _ := u["prompt_tokens_details"].(map[string]any)
		v, _ := d["cached_tokens"].(float64)
		return v
	}

	if code, out := complete(map[string]any{"cache_salt": "tenant-a"}, http.Header{}); code != 200 {
		t.Fatalf("tenant A: %d %v", code, out)
	}
	var holder uint64
	waitUntil(t, 20*time.Second, "tenant A's blocks in the index", func() (bool, string) {
		ov := routeOverlap(map[string]any{"cache_salt": "tenant-a"}, http.Header{})
		for w, n := range ov {
			if n == blocks {
				holder = w
				return true, ""
			}
		}
		return false, fmt.Sprintf("overlap %v", ov)
	})
	if ov := routeOverlap(map[string]any{}, http.Header{frontend.HeaderCacheSalt: {"tenant-a"}}); ov[holder] != blocks {
		t.Errorf("same salt by header: overlap %v, want %d on worker %d", ov, blocks, holder)
	}
	for name, body := range map[string]map[string]any{"tenant B": {"cache_salt": "tenant-b"}, "no salt": {}} {
		if ov := routeOverlap(body, http.Header{}); ov[1] != 0 || ov[2] != 0 {
			t.Errorf("%s is credited with tenant A's blocks: overlap %v", name, ov)
		}
	}

	pin := fmt.Sprint(holder)
	code, out := complete(map[string]any{}, http.Header{frontend.HeaderCacheSalt: {"tenant-b"}, frontend.HeaderPinWorker: {pin}})
	if code != 200 || cached(out) != 0 {
		t.Errorf("tenant B on tenant A's worker: %d, cached %v tokens, want 0: %v", code, cached(out), out)
	}
	code, out = complete(map[string]any{"cache_salt": "tenant-a"}, http.Header{frontend.HeaderPinWorker: {pin}})
	// The engine recomputes the last block of a fully cached prompt.
	if code != 200 || cached(out) < (blocks-1)*DefaultBlockSize {
		t.Errorf("tenant A again: %d, cached %v tokens, want >= %d: %v", code, cached(out), (blocks-1)*DefaultBlockSize, out)
	}
}
