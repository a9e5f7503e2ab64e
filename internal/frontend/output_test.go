package frontend

import (
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// With Router.TrackOutputBlocks the charged output is the hint header,
// else the model's running average of completed streams (the fake worker
// streams 2 tokens), each capped by max_tokens, and max_tokens before the
// model's first completion; a malformed hint is a 400.
func TestExpectedOutput(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) { c.Router.TrackOutputBlocks = true })
	var hits atomic.Int64
	if err := s.AddWorker(Worker{ID: 1, URL: fakeWorker(t, 0, &hits).URL}); err != nil {
		t.Fatal(err)
	}
	if got := s.expectedOutput(&job{model: "m", maxTokens: 100, hint: -1}); got != 100 {
		t.Fatalf("before any completion: %d, want max_tokens 100", got)
	}
	rec := do(t, s.Handler(), "POST", "/v1/completions", `{"model":"m","prompt":"hi","stream":true,"max_tokens":100}`)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	for _, c := range []struct {
		j    job
		want int
	}{
		{job{model: "m", maxTokens: 100, hint: -1}, 2},  // the average of one 2-token stream
		{job{model: "m", maxTokens: 1, hint: -1}, 1},    // capped
		{job{model: "m", maxTokens: 100, hint: 50}, 50}, // the hint
		{job{model: "m", maxTokens: 0, hint: 500}, 500}, // no max_tokens: uncapped
		{job{model: "m", maxTokens: 100, hint: 500}, 100},
		{job{model: "other", maxTokens: 7, hint: -1}, 7}, // per model
	} {
		if got := s.expectedOutput(&c.j); got != c.want {
			t.Errorf("%+v: %d, want %d", c.j, got, c.want)
		}
	}
	req := httptest.NewRequest("POST", "/v1/completions", strings.NewReader(`{"prompt":"hi"}`))
	req.Header.Set(HeaderExpectedOutput, "-3")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	if w.Code != 400 || !strings.Contains(w.Body.String(), HeaderExpectedOutput) {
		t.Errorf("bad hint: %d %s", w.Code, w.Body.String())
	}
}
