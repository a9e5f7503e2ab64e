package frontend

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
)

// FuzzUnstreamer: whatever chunks an engine streams, folding them either
// fails or makes a JSON body, within the byte budget (never a panic: a
// tool-call index of -1 once did).
func FuzzUnstreamer(f *testing.F) {
	for _, s := range []string{
		`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"t","function":{"name":"f","arguments":"{"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1}]}}]}`,
		`{"choices":[{"index":7,"text":"a","finish_reason":"stop"}],"usage":{"prompt_tokens":1},"x":1}`,
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, chat bool) {
		u := newUnstreamer(chat, 4<<10)
		for range 3 { // the same chunk thrice: indices and extras accumulate
			if err := u.add(data); err != nil {
				if errors.Is(err, errAnswerTooLarge) && u.left >= 0 {
					t.Fatalf("too large with %d bytes left", u.left)
				}
				return
			}
		}
		b, err := u.body()
		if err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("folded body is not JSON: %s", b)
		}
	})
}

// FuzzRouteBody: whatever body POST /route gets (decoded into
// RouteRequest, its prompt, messages or token ids tokenized and routed),
// the answer is a 200 or a client error, never a server error or a
// panic; a tracked booking is released so the next input starts clean.
func FuzzRouteBody(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hello","track":true}`, `{"tokens":[1,2,3],"hop":"decode"}`,
		`{"messages":[{"role":"user","content":"hi"}],"lora":"a","namespace":"n"}`,
		`{"prompt":[[1]]}`, `{"priority":1e308}`, `{"hop":"x","prompt":"y"}`, `[]`, `{"tokens":[-1]}`,
	} {
		f.Add([]byte(s))
	}
	e := newEngineStub(f)
	s := newServerWith(f, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.LoadPollInterval = -1
	})
	if err := s.AddWorker(Worker{ID: 1, URL: e.URL}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/route", bytes.NewReader(body)))
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable && rec.Code != StatusOverloaded {
			t.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
		}
		var rr RouteResponse
		if rec.Code == 200 && json.Unmarshal(rec.Body.Bytes(), &rr) == nil && rr.Tracked {
			s.dropBooking(rr.RequestID, "addr:192.0.2.1")
			_ = s.rt.Free(rr.RequestID, time.Now())
		}
	})
}
