package frontend

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/internal/frontend/oai"
	"github.com/kvrouter/kvrouter/router"
)

// TestMaxTokensBounded: max_tokens near 2^63 never reaches a worker (it
// made the mocker generate forever); with the model's context set, prompt
// plus max_tokens beyond it is vLLM's 400 context_length_exceeded.
func TestMaxTokensBounded(t *testing.T) {
	for _, ctxLen := range []int{0, 4096} {
		s := newServerWith(t, false, func(c *Config) {
			c.Router.Policy = router.PolicyRoundRobin
			c.Hardening.MaxModelLen = ctxLen
		})
		var hits atomic.Int64
		wk := fakeWorker(t, 0, &hits)
		if err := s.AddWorker(Worker{ID: 1, URL: wk.URL}); err != nil {
			t.Fatal(err)
		}
		bad := []string{"9223372036854775807", "9223372036854775000", "4611686018427387904", "16777217"}
		if ctxLen > 0 {
			bad = append(bad, "4096", "4095")
		}
		for _, mt := range bad {
			for path, body := range map[string]string{
				"/v1/completions":      `{"prompt":"hi there","stream":true,"max_tokens":` + mt + `}`,
				"/v1/chat/completions": `{"messages":[{"role":"user","content":"hi"}],"stream":true,"max_completion_tokens":` + mt + `}`,
			} {
				rec := do(t, s.Handler(), "POST", path, body)
				e, ok := oai.ParseError(rec.Code, rec.Body.Bytes())
				if rec.Code != 400 || !ok || e.Code != "context_length_exceeded" || e.Param != "max_tokens" {
					t.Errorf("context %d, %s max_tokens %s: %d %s", ctxLen, path, mt, rec.Code, rec.Body.String())
				}
			}
		}
		if hits.Load() != 0 {
			t.Errorf("context %d: %d requests reached the worker", ctxLen, hits.Load())
		}
		rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi","stream":true,"max_tokens":100}`)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), "[DONE]") {
			t.Errorf("context %d: ordinary request %d %s", ctxLen, rec.Code, rec.Body.String())
		}
	}
}
