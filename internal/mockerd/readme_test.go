package mockerd

import (
	"io"
	"net/http"
	"testing"
)

// TestHealthz: the simulated worker answers GET /healthz (docs/study-tools.md:
// "One simulated worker: kvrouter mocker").
func TestHealthz(t *testing.T) {
	_, hs, _ := newTestServer(t)
	resp, err := http.Get(hs.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "ok\n" {
		t.Fatalf("/healthz: %d %q", resp.StatusCode, b)
	}
}
