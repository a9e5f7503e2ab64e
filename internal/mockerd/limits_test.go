package mockerd

import (
	"strconv"
	"testing"

	"github.com/kvrouter/kvrouter/internal/oai"
)

// TestMaxTokensNearIntMax: max_tokens near 2^63 is a 400 naming the
// model's context, not an overflowing sum that admits an endless request.
func TestMaxTokensNearIntMax(t *testing.T) {
	_, hs, _ := newTestServer(t)
	for _, mt := range []string{"9223372036854775807", "9223372036854775806", "9223372036854775000", "4611686018427387904"} {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			body := `{"prompt":[1,2,3],"max_tokens":` + mt + `}`
			if path == "/v1/chat/completions" {
				body = `{"messages":[{"role":"user","content":"hi"}],"max_tokens":` + mt + `}`
			}
			resp, b := post(t, hs.URL+path, body)
			if resp.StatusCode != 400 {
				t.Errorf("%s max_tokens %s: %d %s, want 400", path, mt, resp.StatusCode, b)
				continue
			}
			if e, ok := oai.ParseError(400, b); !ok || e.Param != "max_tokens" {
				t.Errorf("%s max_tokens %s: %s, want an OpenAI error on max_tokens", path, mt, b)
			}
		}
	}
	// An ordinary request still passes.
	resp, b := post(t, hs.URL+"/v1/completions", `{"prompt":[1,2,3],"max_tokens":`+strconv.Itoa(100)+`}`)
	if resp.StatusCode != 200 {
		t.Errorf("max_tokens filling the context: %d %s", resp.StatusCode, b)
	}
}
