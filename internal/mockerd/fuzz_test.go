package mockerd

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzSideInputs: whatever body POST /tokenize or POST /kv/release gets
// (read up to 32 MiB; the generation endpoints' bodies are oai's
// ParseCompletion and ParseChat, fuzzed there), the mocker answers it
// with a success or a client error, never a server error or a panic.
func FuzzSideInputs(f *testing.F) {
	for _, s := range []string{`{"prompt":"hello"}`, `{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false}`,
		`{"remote_request_id":"12"}`, `{"remote_request_id":"-1"}`, `{"prompt":7}`, `[]`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	s, _, _ := newTestServer(f)
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body []byte, release bool) {
		path := "/tokenize"
		if release {
			path = "/kv/release"
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if rec.Code >= 500 {
			t.Fatalf("POST %s %q: %d %s", path, body, rec.Code, rec.Body.String())
		}
	})
}
