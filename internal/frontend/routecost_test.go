package frontend

import (
	"net/http"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
)

// TestSetRouteHeadersAsSet: the route headers, written into the map with
// one backing array, are what http.Header.Set of each gives.
func TestSetRouteHeadersAsSet(t *testing.T) {
	d := &router.Decision{Worker: kvevents.Worker{ID: 12345}, CachedTokens: 4567}
	d.Overlap[kvevents.TierDevice], d.Overlap[kvevents.TierHostPinned] = 300, 7
	got := http.Header{HeaderWorker: {"stale"}}
	setRouteHeaders(got, "ab-99", d)
	want := http.Header{}
	want.Set(HeaderWorker, "12345")
	want.Set(HeaderOverlap, "300")
	want.Set(HeaderTierOverlap, tierOverlapHeader(&d.Overlap))
	want.Set(HeaderCached, "4567")
	want.Set(HeaderReqID, "ab-99")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("headers %v, want %v", got, want)
	}
	if v := got.Get(HeaderTierOverlap); v != "device=300,host_pinned=7,disk=0,external=0" {
		t.Errorf("tier overlap %q", v)
	}
}

// TestRouteCountsPerRequest: each proxied request is one observation of
// kvrouter_route_seconds and one count of the cached metric children
// (decisions per worker, requests by endpoint and status, outcomes), the
// same as the vectors' own children; the proxy's candidates buffers go
// back when the flights land, so the decisions stay right across reuse.
func TestRouteCountsPerRequest(t *testing.T) {
	s := newServer(t, router.PolicyKV)
	var hits atomic.Int64
	w := fakeWorker(t, 0, &hits)
	for id := uint64(1); id <= 3; id++ {
		if err := s.AddWorker(Worker{ID: id, URL: w.URL}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 5
	for i := range n {
		rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hello there","stream":true}`)
		if rec.Code != 200 || rec.Header().Get(HeaderWorker) == "" {
			t.Fatalf("request %d: %d %q", i, rec.Code, rec.Body.String())
		}
	}
	if got := metricValue(t, s, "kvrouter_route_seconds_count"); got != n {
		t.Errorf("route observations %v, want %d", got, n)
	}
	if got := metricValue(t, s, `kvrouter_requests_total{code="200",endpoint="completions"}`); got != n {
		t.Errorf("requests %v, want %d", got, n)
	}
	if got := metricValue(t, s, `kvrouter_proxied_total{outcome="ok"}`); got != n {
		t.Errorf("outcomes %v, want %d", got, n)
	}
	sum := 0.0
	for id := 1; id <= 3; id++ {
		sum += metricValue(t, s, `kvrouter_route_decisions_total{worker="`+strconv.Itoa(id)+`"}`)
	}
	if sum != n || hits.Load() != n {
		t.Errorf("decisions %v, worker hits %d, want %d", sum, hits.Load(), n)
	}
	if st := s.Router().Stats(); st.Active != 0 {
		t.Errorf("%d requests still active", st.Active)
	}
}

// TestChildrenResolveOnce: a key's child is resolved by the vector once,
// then served from the cache.
func TestChildrenResolveOnce(t *testing.T) {
	calls := map[string]int{}
	c := newChildren(func(k string) string { calls[k]++; return "child " + k })
	for range 3 {
		if got := c.get("a"); got != "child a" {
			t.Fatalf("get a = %q", got)
		}
	}
	c.get("b")
	if calls["a"] != 1 || calls["b"] != 1 {
		t.Errorf("resolved %v, want each once", calls)
	}
}

// TestPutCandsGrows: a buffer too small for the decision it served comes
// back with room for it, empty.
func TestPutCandsGrows(t *testing.T) {
	buf := getCands()
	*buf = (*buf)[:0:0]
	putCands(buf, 64)
	if cap(*buf) < 64 || len(*buf) != 0 {
		t.Errorf("len %d cap %d, want 0 and >= 64", len(*buf), cap(*buf))
	}
}
