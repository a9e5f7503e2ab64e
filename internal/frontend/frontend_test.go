package frontend

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
)

// fakeWorker streams three SSE events, or answers with status when set.
func fakeWorker(t *testing.T, status int, hits *atomic.Int64) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"error":{"message":"engine exploded","type":"server_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{`{"choices":[{"text":"a"}]}`, `{"choices":[{"text":"b"}]}`, `[DONE]`} {
			_, _ = io.WriteString(w, "data: "+d+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func newServer(t *testing.T, policy router.Policy) *Server {
	t.Helper()
	return newServerWith(t, false, func(c *Config) { c.Router.Policy = policy })
}

func do(t *testing.T, h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec
}

func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	ln.Close()
	return u
}

func TestRetryOnUnreachableWorker(t *testing.T) {
	s := newServer(t, router.PolicyRoundRobin)
	var hits atomic.Int64
	live := fakeWorker(t, 0, &hits)
	if err := s.AddWorker(Worker{ID: 1, URL: deadURL(t)}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddWorker(Worker{ID: 2, URL: live.URL}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi","stream":true}`)
		if rec.Code != 200 || rec.Header().Get(HeaderWorker) != "2" || !strings.Contains(rec.Body.String(), "[DONE]") {
			t.Fatalf("request %d: %d worker %q body %q", i, rec.Code, rec.Header().Get(HeaderWorker), rec.Body.String())
		}
	}
	if hits.Load() != 4 {
		t.Errorf("live worker served %d", hits.Load())
	}
	if st := s.Router().Stats(); st.Active != 0 || st.Workers != 1 {
		t.Errorf("router stats %+v: dead worker must be out, no load left", st)
	}
}

func TestWorkerErrorPassthroughAndReady(t *testing.T) {
	s := newServer(t, router.PolicyKV)
	if rec := do(t, s.Handler(), "GET", "/readyz", ""); rec.Code != 503 {
		t.Errorf("readyz without workers: %d", rec.Code)
	}
	if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi"}`); rec.Code != 503 ||
		!strings.Contains(rec.Body.String(), `"code":"no_worker"`) {
		t.Errorf("no workers: %d %s", rec.Code, rec.Body.String())
	}
	var hits atomic.Int64
	bad := fakeWorker(t, 500, &hits)
	if err := s.AddWorker(Worker{ID: 9, URL: bad.URL}); err != nil {
		t.Fatal(err)
	}
	rec := do(t, s.Handler(), "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`)
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "engine exploded") || rec.Header().Get(HeaderWorker) != "9" {
		t.Errorf("worker error: %d %s", rec.Code, rec.Body.String())
	}
	if st := s.Router().Stats(); st.Active != 0 {
		t.Errorf("load left after worker error: %+v", st)
	}
	err := s.AddWorker(Worker{ID: 10, URL: bad.URL, Info: router.WorkerInfo{BlockSize: 16}})
	if !errors.Is(err, router.ErrBlockSize) {
		t.Errorf("block size mismatch accepted: %v", err)
	}
	if rec := do(t, s.Handler(), "GET", "/readyz", ""); rec.Code != 200 {
		t.Errorf("readyz: %d", rec.Code)
	}
	if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi"}`); rec.Code != 500 {
		t.Errorf("second: %d", rec.Code)
	}
	if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"x"}`); rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("content type %q", rec.Header().Get("Content-Type"))
	}
	if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"x"}`+"\x00"); rec.Code != 400 {
		t.Errorf("garbage body: %d", rec.Code)
	}
}

// GET /debug/index is snake_case throughout, index stats included, and
// counts the blocks an applied event stored.
func TestDebugIndexJSON(t *testing.T) {
	s := newServer(t, router.PolicyKV)
	if err := s.AddWorker(Worker{ID: 1, URL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	ev := kvevents.Event{WorkerID: 1, EventID: 1, Kind: kvevents.KindStored,
		Blocks: []kvevents.Block{{Hash: 11, Local: 101}, {Hash: 12, Local: 102}}}
	if err := s.Apply(&ev); err != nil {
		t.Fatal(err)
	}
	rec := do(t, s.Handler(), "GET", "/debug/index", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var rep struct {
		Workers []struct {
			Worker uint64 `json:"worker_id"`
			Total  int    `json:"total_blocks"`
		} `json:"workers"`
		Tiers map[string]map[string]json.Number `json:"tiers"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	dev, ok := rep.Tiers["device"]
	if !ok {
		t.Fatalf("no device tier in %s", rec.Body)
	}
	for _, k := range []string{"blocks", "nodes", "workers", "bytes", "applied", "rejected", "unknown_remove", "queued"} {
		if _, ok := dev[k]; !ok {
			t.Errorf("device tier stats lack %q: %s", k, rec.Body)
		}
	}
	if dev["blocks"] != "2" || dev["applied"] != "1" {
		t.Errorf("device tier stats %v, want blocks 2 and applied 1", dev)
	}
	if len(rep.Workers) != 1 || rep.Workers[0].Worker != 1 || rep.Workers[0].Total != 2 {
		t.Errorf("workers %+v", rep.Workers)
	}
}
