package frontend

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// answerWorker answers every request with body under content type ct.
func answerWorker(t *testing.T, ct, body string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestOutputFromUsage: the output-length average takes the worker's
// reported completion_tokens when there is one: from a JSON answer (no
// events to count) and over the counted events of a stream (one event
// may carry several tokens), in serve's proxy and in Pick (the endpoint
// picker sees the answer's chunks).
func TestOutputFromUsage(t *testing.T) {
	const (
		jsonAnswer = `{"choices":[{"text":"abcdefg"}],"usage":{"prompt_tokens":3,"completion_tokens":7,"total_tokens":10}}`
		sseAnswer  = "data: {\"choices\":[{\"text\":\"ab\"}]}\n\n" +
			"data: {\"choices\":[{\"text\":\"cde\"}]}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}\n\n" +
			"data: [DONE]\n\n"
	)
	for _, c := range []struct {
		name, ct, body string
		want           int
	}{
		{"json", "application/json", jsonAnswer, 7},
		{"sse", "text/event-stream", sseAnswer, 5},
	} {
		t.Run("proxy/"+c.name, func(t *testing.T) {
			s := newServerWith(t, false, func(cfg *Config) { cfg.Router.TrackOutputBlocks = true })
			if err := s.AddWorker(Worker{ID: 1, URL: answerWorker(t, c.ct, c.body).URL}); err != nil {
				t.Fatal(err)
			}
			rec := do(t, s.Handler(), "POST", "/v1/completions", `{"model":"m","prompt":"hi","stream":true,"max_tokens":100}`)
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
			}
			if got := s.expectedOutput(&job{model: "m", maxTokens: 100, hint: -1}); got != c.want {
				t.Fatalf("expected output after one answer: %d, want the reported %d", got, c.want)
			}
		})
		t.Run("pick/"+c.name, func(t *testing.T) {
			s := newServerWith(t, false, func(cfg *Config) { cfg.Router.TrackOutputBlocks = true })
			p := pickOne(t, s, c.ct)
			now := time.Now()
			for i := 0; i < len(c.body); i += 16 { // chunks that split lines and JSON
				p.ResponseBody([]byte(c.body[i:min(i+16, len(c.body))]), now)
			}
			p.Done("")
			if got := s.expectedOutput(&job{model: "m", maxTokens: 100, hint: -1}); got != c.want {
				t.Fatalf("expected output after one answer: %d, want the reported %d", got, c.want)
			}
		})
	}
}
