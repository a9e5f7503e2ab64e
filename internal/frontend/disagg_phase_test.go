package frontend

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/oai"
)

// TestDisaggTransferPhase: a decode engine that reports its KV pull in
// oai.TrailerKVTransfer (the mocker) splits the decode hop's TTFT into
// transfer and decode_first (the remainder, clamped at 0: the reported
// hour exceeds the hop); one that does not (vLLM) leaves decode_first
// whole and no transfer phase. The trailer never reaches the client.
func TestDisaggTransferPhase(t *testing.T) {
	const stream = `{"prompt":"split my first token","max_tokens":2,"stream":true}`
	s, ws := newPDFleet(t, nil)
	hour := "3600"
	ws[2].transfer.Store(&hour)
	ws[3].transfer.Store(&hour)
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	resp, err := http.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), "[DONE]") {
		t.Fatalf("%d %v: %s", resp.StatusCode, err, b)
	}
	if len(resp.Trailer) != 0 || resp.Header.Get(oai.TrailerKVTransfer) != "" {
		t.Fatalf("client got trailers %v / header %q", resp.Trailer, resp.Header.Get(oai.TrailerKVTransfer))
	}
	// Not streamed: the transfer is still observed, no first token.
	if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"split my first token","max_tokens":2}`); rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
	m := do(t, s.Handler(), "GET", "/metrics", "").Body.String()
	for _, want := range []string{
		`kvrouter_disagg_ttft_phase_seconds_count{phase="transfer"} 2`,
		`kvrouter_disagg_ttft_phase_seconds_sum{phase="transfer"} 7200`,
		`kvrouter_disagg_ttft_phase_seconds_count{phase="decode_first"} 1`,
		`kvrouter_disagg_ttft_phase_seconds_sum{phase="decode_first"} 0` + "\n",
		`kvrouter_disagg_ttft_phase_seconds_count{phase="prefill"} 2`,
	} {
		if !strings.Contains(m, want) {
			t.Fatalf("metrics lack %q:\n%s", want, m)
		}
	}
	checkIdle(t, s)

	// An engine without the report (a malformed one counts as none).
	s, ws = newPDFleet(t, nil)
	bad := "soon"
	ws[2].transfer.Store(&bad)
	for range 2 {
		if rec := do(t, s.Handler(), "POST", "/v1/completions", stream); rec.Code != 200 {
			t.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
	}
	m = do(t, s.Handler(), "GET", "/metrics", "").Body.String()
	if strings.Contains(m, `phase="transfer"`) || !strings.Contains(m, `kvrouter_disagg_ttft_phase_seconds_count{phase="decode_first"} 2`) ||
		strings.Contains(m, `kvrouter_disagg_ttft_phase_seconds_sum{phase="decode_first"} 0`+"\n") {
		t.Fatalf("without a transfer report: want decode_first only, whole:\n%s", m)
	}
	checkIdle(t, s)
}
