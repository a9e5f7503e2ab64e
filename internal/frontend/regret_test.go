package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// TestRegretCounters: an engine that reports usage.cached_tokens moves the
// regret counters. Worker 1 holds 2 blocks of each 3-block prompt and
// reports 1 cached: the first request's missing block is stale (no
// removal arrived); during the second the engine's Removed event for the
// second block is applied before it answers, so that block is
// evicted_after_route.
func TestRegretCounters(t *testing.T) {
	s := newServerWith(t, false, nil)
	bs := s.cfg.Router.BlockSize
	toks := make([]uint32, 3*bs)
	for i := range toks {
		toks[i] = uint32(i + 1)
	}
	seq := kvhash.SeqHashes(kvhash.LocalHashes(toks[:2*bs], bs, kvhash.Seed("", "")))
	var evict atomic.Bool
	eng := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if evict.Load() {
			ev := kvevents.Event{WorkerID: 1, EventID: 2, Kind: kvevents.KindRemoved, Blocks: []kvevents.Block{{Hash: seq[1]}}}
			if err := s.Apply(&ev); err != nil || s.Flush(context.Background()) != nil {
				http.Error(w, "apply", 500)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"text_completion","choices":[{"index":0,"text":"x","finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`, 3*bs, 3*bs+1, bs)
	}))
	t.Cleanup(eng.Close)
	if err := s.AddWorker(Worker{ID: 1, URL: eng.URL}); err != nil {
		t.Fatal(err)
	}
	storeTokens(t, s, 1, toks[:2*bs])
	route := func(last uint32) {
		t.Helper()
		toks[len(toks)-1] = last // a new third block: the predicted side index holds the first prompt's
		body, _ := json.Marshal(map[string]any{"prompt": toks, "max_tokens": 1})
		if rec := do(t, s.Handler(), "POST", "/v1/completions", string(body)); rec.Code != 200 || rec.Header().Get(HeaderOverlap) != "2" {
			t.Fatalf("completion: %d overlap %q %s", rec.Code, rec.Header().Get(HeaderOverlap), rec.Body)
		}
	}
	route(1000)
	want := []string{
		`kvrouter_route_blocks_total{kind="prompt"} 3`,
		`kvrouter_route_blocks_total{kind="reachable"} 2`,
		`kvrouter_route_blocks_total{kind="chosen"} 2`,
		`kvrouter_route_blocks_total{kind="actual"} 1`,
		`kvrouter_route_lost_blocks_total{cause="stale"} 1`,
		`kvrouter_route_lost_blocks_total{cause="evicted_after_route"} 0`,
		`kvrouter_route_lost_blocks_total{cause="load"} 0`,
	}
	check := func(want []string) {
		t.Helper()
		lines := metricLines(t, s)
		for _, w := range want {
			if !hasMetric(lines, w) {
				t.Errorf("/metrics lacks %q", w)
			}
		}
	}
	check(want)
	evict.Store(true)
	route(2000)
	check([]string{
		`kvrouter_route_blocks_total{kind="prompt"} 6`,
		`kvrouter_route_blocks_total{kind="chosen"} 4`,
		`kvrouter_route_blocks_total{kind="actual"} 2`,
		`kvrouter_route_lost_blocks_total{cause="stale"} 1`,
		`kvrouter_route_lost_blocks_total{cause="evicted_after_route"} 1`,
	})
}
