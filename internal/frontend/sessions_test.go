package frontend

import (
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/router"
)

// TestSessionIDBounded: a session id longer than the router's limit is a
// 400 naming the field, on /route's body and on the header of every
// endpoint, before it reaches the router or a worker; the affinity store
// is exported as a bounded store. Before: 300 ids of 1 MiB each took the
// router from 124 to 578 MB, held for the TTL.
func TestSessionIDBounded(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.Router.Affinity.Enabled = true
	})
	var hits atomic.Int64
	wk := fakeWorker(t, 0, &hits)
	if err := s.AddWorker(Worker{ID: 1, URL: wk.URL}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("s", router.DefaultMaxSessionIDBytes+1)
	rec := do(t, s.Handler(), "POST", "/route", `{"prompt":"hello","session_id":"`+long+`"}`)
	if e, ok := oai.ParseError(rec.Code, rec.Body.Bytes()); rec.Code != 400 || !ok || e.Param != "session_id" {
		t.Fatalf("/route with a long session_id: %d %s", rec.Code, rec.Body.String())
	}
	for path, body := range map[string]string{
		"/route":               `{"prompt":"hello"}`,
		"/v1/completions":      `{"prompt":"hi there","stream":true,"max_tokens":4}`,
		"/v1/chat/completions": `{"messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":4}`,
	} {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set(HeaderSession, long)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if e, ok := oai.ParseError(rec.Code, rec.Body.Bytes()); rec.Code != 400 || !ok || e.Param != HeaderSession {
			t.Errorf("%s with a long %s: %d %s", path, HeaderSession, rec.Code, rec.Body.String())
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("%d requests reached the worker", hits.Load())
	}
	ok := do(t, s.Handler(), "POST", "/route", `{"prompt":"hello","session_id":"`+long[:router.DefaultMaxSessionIDBytes]+`"}`)
	if ok.Code != 200 {
		t.Fatalf("a session id at the limit: %d %s", ok.Code, ok.Body.String())
	}
	m := do(t, s.Handler(), "GET", "/metrics", "").Body.String()
	for _, want := range []string{`kvrouter_store_entries{store="affinity"} 1`, `kvrouter_store_limit_entries{store="affinity"} 100000`,
		`kvrouter_limit_rejected_total{limit="session_id"} 4`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
