package frontend

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStreamedErrorKeepsItsStatus: a non-streaming request is streamed
// from the engine, and an engine that refuses it after the stream's 200
// sends one error event (vLLM's and llm-d-inference-sim's context-length
// refusal). The client gets that error with its code as the status, as
// the engine's own non-streaming answer would be, not a 200 with no
// choices.
func TestStreamedErrorKeepsItsStatus(t *testing.T) {
	const refusal = `{"message":"This model's maximum context length is 1024 tokens.","type":"BadRequestError","param":null,"code":400}`
	for _, tc := range []struct {
		name  string
		event string
		code  int
	}{
		{"code 400", `{"error":` + refusal + `}`, 400},
		{"no code", `{"error":{"message":"engine died","type":"InternalError"}}`, 502},
		{"code not an HTTP error", `{"error":{"message":"x","code":"oops"}}`, 502},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/completions" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte("data: " + tc.event + "\n\ndata: [DONE]\n\n"))
			}))
			defer eng.Close()
			s := newServerWith(t, false, nil)
			if err := s.AddWorker(Worker{ID: 1, URL: eng.URL}); err != nil {
				t.Fatal(err)
			}
			rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hello there","max_tokens":4}`)
			var got struct {
				Error json.RawMessage `json:"error"`
			}
			if rec.Code != tc.code || json.Unmarshal(rec.Body.Bytes(), &got) != nil || len(got.Error) == 0 {
				t.Fatalf("answered %d %s, want %d with the engine's error object", rec.Code, rec.Body, tc.code)
			}
			want := strings.TrimSuffix(strings.TrimPrefix(tc.event, `{"error":`), "}")
			if string(got.Error) != want {
				t.Errorf("error object %s, want the engine's %s", got.Error, want)
			}
			if st := s.Router().Stats(); st.Active != 0 {
				t.Errorf("load left booked after the refusal: %+v", st)
			}
		})
	}
}
