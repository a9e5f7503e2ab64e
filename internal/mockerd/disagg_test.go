package mockerd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// newDisaggServer starts a mocker with worker id and its advertised URL.
func newDisaggServer(t *testing.T, id uint64, hold time.Duration) (*Server, string, *recorder) {
	t.Helper()
	tok, err := tokenizer.Default(tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	cfg := DefaultConfig()
	cfg.Tokenizer = tok
	cfg.Engine.NumBlocks, cfg.Engine.BlockSize, cfg.Engine.SpeedupRatio = 256, 16, 0
	cfg.Engine.HoldTimeout = hold
	cfg.Engine.Worker = kvevents.Worker{ID: id}
	cfg.Sinks = []EventSink{rec}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.AdvertiseURL = "http://" + ln.Addr().String()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	hs := httptest.NewUnstartedServer(s.Handler())
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(func() {
		hs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s, hs.URL, rec
}

// waitFor polls cond every 2ms until it holds or 10s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// TestDisaggProtocol runs vLLM's NIXL proxy flow between two mockers: the
// prefill mocker answers with kv_transfer_params and holds its blocks; the
// decode mocker pulls them (cached_tokens, Stored events for them), then
// tells the prefill mocker, which releases them; the decode answers,
// streamed or not, report the pull's time in oai.TrailerKVTransfer.
func TestDisaggProtocol(t *testing.T) {
	pre, preURL, _ := newDisaggServer(t, 1, 0)
	_, decURL, decRec := newDisaggServer(t, 2, 0)
	ids := make([]string, 40) // 2 full blocks of 16 and 8 tokens
	for i := range ids {
		ids[i] = strconv.Itoa(1000 + i)
	}
	prompt := "[" + strings.Join(ids, ",") + "]"
	body := fmt.Sprintf(`{"prompt":%s,"max_tokens":1,"stream":false,"kv_transfer_params":%s}`, prompt, oai.PrefillParams)
	resp, b := post(t, preURL+"/v1/completions", body)
	if resp.StatusCode != 200 {
		t.Fatalf("prefill: %d %s", resp.StatusCode, b)
	}
	raw, err := oai.RawKVTransferParams(b)
	if err != nil || raw == nil {
		t.Fatalf("prefill answer has no kv_transfer_params: %s (%v)", b, err)
	}
	if v, ok := resp.Trailer[oai.TrailerKVTransfer]; ok {
		t.Fatalf("prefill answer has the transfer trailer %q", v)
	}
	p, _ := oai.ParseKVTransferParams(b)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(preURL, "http://"))
	if !p.DoRemotePrefill || p.DoRemoteDecode || len(p.RemoteBlockIDs) != 3 || *p.RemoteEngineID != "mocker-w1" ||
		*p.RemoteHost != host || strconv.Itoa(*p.RemotePort) != port || p.RemoteRequestID == "" {
		t.Fatalf("prefill kv_transfer_params %s", raw)
	}
	waitFor(t, "the prefill's held blocks", func() bool { return pre.Stats().Held == 1 })

	body = fmt.Sprintf(`{"prompt":%s,"max_tokens":4,"stream":false,"kv_transfer_params":%s}`, prompt, raw)
	resp, b = post(t, decURL+"/v1/completions", body)
	if resp.StatusCode != 200 {
		t.Fatalf("decode: %d %s", resp.StatusCode, b)
	}
	var c oai.Completion
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.Usage == nil || c.Usage.CompletionTokens != 4 || c.Usage.PromptTokensDetails.CachedTokens != 32 || c.KVTransferParams != nil {
		t.Fatalf("decode answer %s: want 4 tokens, 32 cached (the pulled blocks)", b)
	}
	// The decode hop reports its pull (the default KV link: 1 ms latency at
	// least) in the trailer.
	if v, err := strconv.ParseFloat(resp.Trailer.Get(oai.TrailerKVTransfer), 64); err != nil || v < 0.001 {
		t.Fatalf("decode transfer trailer %q (%v), want >= 0.001 s", resp.Trailer.Get(oai.TrailerKVTransfer), err)
	}
	stored := storedBlocks(decRec)
	if stored < 2 {
		t.Fatalf("decode mocker stored %d blocks, want the 2 pulled ones", stored)
	}
	waitFor(t, "the prefill to release the pulled blocks", func() bool { return pre.Stats().Held == 0 })

	// A second release finds nothing.
	resp, _ = post(t, preURL+"/kv/release", `{"remote_request_id":"`+p.RemoteRequestID+`"}`)
	if resp.StatusCode != 404 {
		t.Fatalf("second release: %d, want 404", resp.StatusCode)
	}

	// A streamed decode hop ends with the trailer too, after [DONE] (a new
	// prompt: the decode mocker holds the first one's blocks, no pull).
	for i := range ids {
		ids[i] = strconv.Itoa(2000 + i)
	}
	prompt = "[" + strings.Join(ids, ",") + "]"
	body = fmt.Sprintf(`{"prompt":%s,"max_tokens":1,"stream":false,"kv_transfer_params":%s}`, prompt, oai.PrefillParams)
	if resp, b = post(t, preURL+"/v1/completions", body); resp.StatusCode != 200 {
		t.Fatalf("prefill: %d %s", resp.StatusCode, b)
	}
	raw, _ = oai.RawKVTransferParams(b)
	body = fmt.Sprintf(`{"prompt":%s,"max_tokens":3,"stream":true,"kv_transfer_params":%s}`, prompt, raw)
	resp, b = post(t, decURL+"/v1/completions", body)
	if v, err := strconv.ParseFloat(resp.Trailer.Get(oai.TrailerKVTransfer), 64); resp.StatusCode != 200 || !strings.Contains(string(b), "[DONE]") || err != nil || v < 0.001 {
		t.Fatalf("streamed decode: %d trailer %q (%v): %s", resp.StatusCode, resp.Trailer.Get(oai.TrailerKVTransfer), err, b)
	}
}

// TestDisaggHoldTimeout: blocks nobody pulls are freed after the hold
// timeout, on an idle engine too.
func TestDisaggHoldTimeout(t *testing.T) {
	pre, preURL, _ := newDisaggServer(t, 1, 20*time.Millisecond)
	body := `{"prompt":"hold me for a while please","max_tokens":1,"kv_transfer_params":` + string(oai.PrefillParams) + `}`
	resp, b := post(t, preURL+"/v1/completions", body)
	if resp.StatusCode != 200 {
		t.Fatalf("prefill: %d %s", resp.StatusCode, b)
	}
	waitFor(t, "the hold to expire", func() bool {
		st := pre.Stats()
		return st.HoldsExpired == 1 && st.Held == 0
	})
}
