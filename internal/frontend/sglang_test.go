package frontend

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
)

// sglangRooms is the fake SGLang fleet's rendezvous: the bootstrap rooms
// the prefill servers have seen.
type sglangRooms struct {
	mu    sync.Mutex
	rooms map[uint64]chan struct{}
}

func (r *sglangRooms) room(id uint64) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.rooms[id]
	if !ok {
		c = make(chan struct{})
		r.rooms[id] = c
	}
	return c
}

// sglangBoot are the bootstrap fields of a request.
type sglangBoot struct {
	Host *string `json:"bootstrap_host"`
	Port *int    `json:"bootstrap_port"`
	Room *uint64 `json:"bootstrap_room"`
}

// newSGLangWorker is a fake SGLang server: as a prefill server (prefill
// true) it opens the request's bootstrap room and answers (500 when fail);
// as a decode server it waits for its room to open (as the engine waits for
// the KV push), then answers, streamed or not.
func newSGLangWorker(t *testing.T, rooms *sglangRooms, prefill bool, fail *atomic.Bool, got *atomic.Int64) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/load" {
			http.NotFound(rw, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var bt sglangBoot
		if json.Unmarshal(b, &bt) != nil || bt.Host == nil || bt.Port == nil || bt.Room == nil || *bt.Port != 8998 {
			writeJSON(rw, 400, map[string]any{"error": map[string]any{"message": "no bootstrap fields: " + string(b)}})
			return
		}
		got.Add(1)
		if prefill {
			if fail.Load() {
				writeJSON(rw, 500, map[string]any{"error": map[string]any{"message": "prefill exploded"}})
				return
			}
			close(rooms.room(*bt.Room))
			writeJSON(rw, 200, map[string]any{"choices": []map[string]any{{"text": "x"}}})
			return
		}
		select {
		case <-rooms.room(*bt.Room):
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second):
			writeJSON(rw, 504, map[string]any{"error": map[string]any{"message": "no prefill in the room"}})
			return
		}
		if strings.Contains(string(b), `"stream":true`) {
			rw.Header().Set("Content-Type", "text/event-stream")
			for _, d := range []string{`{"choices":[{"text":"a"}]}`, `[DONE]`} {
				_, _ = io.WriteString(rw, "data: "+d+"\n\n")
				rw.(http.Flusher).Flush()
			}
			return
		}
		writeJSON(rw, 200, map[string]any{"choices": []map[string]any{{"text": "a"}}})
	}))
	t.Cleanup(s.Close)
	return s
}

// TestSGLangPD: prefill workers with a bootstrap port get SGLang's PD
// protocol: the same request with bootstrap_host/port/room goes to both
// hops at once, the decode's answer is relayed; a failing prefill cancels
// its decode request, which is retried with the other prefill server.
func TestSGLangPD(t *testing.T) {
	rooms := &sglangRooms{rooms: map[uint64]chan struct{}{}}
	s := newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.Router.Disagg.Policy = router.DisaggAlways
		c.LoadPollInterval = -1
	})
	var fail [2]atomic.Bool
	var never atomic.Bool
	var got [4]atomic.Int64
	for i := range 4 {
		id := uint64(i + 1)
		prefill := i < 2
		f := &never
		if prefill {
			f = &fail[i]
		}
		srv := newSGLangWorker(t, rooms, prefill, f, &got[i])
		w := Worker{ID: id, URL: srv.URL, Info: router.WorkerInfo{Role: router.RoleDecode}}
		if prefill {
			w.Info.Role, w.BootstrapPort = router.RolePrefill, 8998
		}
		if err := s.AddWorker(w); err != nil {
			t.Fatal(err)
		}
	}
	for _, stream := range []bool{false, true} {
		body := `{"prompt":"hello sglang","max_tokens":3,"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
		rec := do(t, s.Handler(), "POST", "/v1/completions", body)
		pw, dw := rec.Header().Get(HeaderPrefillWorker), rec.Header().Get(HeaderWorker)
		if rec.Code != 200 || (pw != "1" && pw != "2") || (dw != "3" && dw != "4") || stream != strings.Contains(rec.Body.String(), "[DONE]") {
			t.Fatalf("stream=%t: %d prefill %q decode %q: %s", stream, rec.Code, pw, dw, rec.Body.String())
		}
	}
	if got[0].Load()+got[1].Load() != 2 || got[2].Load()+got[3].Load() != 2 {
		t.Fatalf("prefill servers got %d, decode servers %d requests; want 2 and 2",
			got[0].Load()+got[1].Load(), got[2].Load()+got[3].Load())
	}
	checkIdle(t, s)

	fail[0].Store(true)
	for i := range 3 {
		rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"again","max_tokens":3}`)
		if rec.Code != 200 || rec.Header().Get(HeaderPrefillWorker) != "2" {
			t.Fatalf("request %d with prefill 1 failing: %d prefill %q: %s", i, rec.Code, rec.Header().Get(HeaderPrefillWorker), rec.Body.String())
		}
	}
	checkIdle(t, s)
}
