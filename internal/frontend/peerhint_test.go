package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// TestPeerHintWire: a decision's peer-KV hint reaches a vLLM-style worker
// as the x-kv-cache-source-host-port header and kv_transfer_params naming
// the peer and the hinted leading blocks (no remote_request_id), an SGLang
// worker as the header only; no hint, an unknown peer or the worker itself
// as peer leave the request as it was.
func TestPeerHintWire(t *testing.T) {
	s := newServerWith(t, false, nil)
	for _, w := range []Worker{{ID: 1, URL: "http://127.0.0.1:8001"}, {ID: 2, URL: "http://127.0.0.1:8002"},
		{ID: 3, URL: "http://127.0.0.1:8003", BootstrapPort: 8998}} {
		if err := s.AddWorker(w); err != nil {
			t.Fatal(err)
		}
	}
	wk := func(id uint64) *Worker {
		w, ok := s.pool.Get(id)
		if !ok {
			t.Fatalf("worker %d missing", id)
		}
		return w
	}
	body := []byte(`{"model":"m","prompt":"hello","max_tokens":3}`)
	hint := &selector.PeerHint{Peer: kvevents.Worker{ID: 1}, Blocks: 5}

	for _, c := range []struct {
		name   string
		worker uint64
		h      *selector.PeerHint
	}{{"no hint", 2, nil}, {"unknown peer", 2, &selector.PeerHint{Peer: kvevents.Worker{ID: 9}, Blocks: 5}},
		{"peer is the worker", 1, hint}} {
		hdr := http.Header{}
		if got := s.withPeerHint(hdr, body, wk(c.worker), c.h); !bytes.Equal(got, body) || len(hdr) != 0 {
			t.Fatalf("%s: body %s header %v, want both untouched", c.name, got, hdr)
		}
	}

	hdr := http.Header{}
	got := s.withPeerHint(hdr, body, wk(2), hint)
	if v := hdr.Get("x-kv-cache-source-host-port"); v != "127.0.0.1:8001" {
		t.Fatalf("header %q, want the peer's host:port", v)
	}
	p, err := oai.ParseKVTransferParams(got)
	if err != nil || p == nil {
		t.Fatalf("no kv_transfer_params in %s (%v)", got, err)
	}
	if !p.DoRemotePrefill || p.DoRemoteDecode || len(p.RemoteBlockIDs) != 5 || p.RemoteBlockIDs[4] != 4 ||
		*p.RemoteHost != "127.0.0.1" || *p.RemotePort != 8001 || *p.RemoteEngineID != "peer-w1" || p.RemoteRequestID != "" {
		t.Fatalf("kv_transfer_params %+v of %s", p, got)
	}
	if !bytes.Contains(got, []byte(`"max_tokens":3`)) || !bytes.Contains(got, []byte(`"prompt":"hello"`)) {
		t.Fatalf("the client's fields lost: %s", got)
	}

	hdr = http.Header{}
	if got := s.withPeerHint(hdr, body, wk(3), hint); !bytes.Equal(got, body) || hdr.Get(HeaderKVSource) != "127.0.0.1:8001" {
		t.Fatalf("SGLang worker: body %s header %v, want the header only", got, hdr)
	}
}

// TestPeerHintMetric drives kvrouter_peer_hints_total through the proxy:
// worker 1 holds a prompt, the prompt is pinned to worker 2, which gets
// the hint (sent) and, when its answer carries the KV transfer trailer
// as a mocker's does, counts as pulled; an engine that reports no pull
// (vLLM) leaves pulled alone; a request to the holder itself carries no
// hint; a hint naming a peer that left the pool counts as unsent.
func TestPeerHintMetric(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) { c.Router.EnableFeature = []string{router.FeaturePeerKVHints} })
	holder := newRecWorker(t, 1, 0)
	var report atomic.Bool // answer with the mocker's transfer trailer
	var hinted atomic.Int64
	puller := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if p, err := oai.ParseKVTransferParams(b); err == nil && p != nil && p.DoRemotePrefill {
			hinted.Add(1)
		}
		if report.Load() {
			rw.Header().Set(http.TrailerPrefix+oai.TrailerKVTransfer, "0.0021")
		}
		if strings.Contains(string(b), `"stream":true`) {
			rw.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(rw, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		writeJSON(rw, 200, map[string]any{"choices": []map[string]any{{"text": "a"}}})
	}))
	t.Cleanup(puller.Close)
	for _, w := range []Worker{{ID: 1, URL: holder.URL}, {ID: 2, URL: puller.URL}} {
		if err := s.AddWorker(w); err != nil {
			t.Fatal(err)
		}
	}
	// Two prompts: once routed to worker 2, a prompt counts as held there
	// (the predicted side index), so the second hint needs another one.
	var texts [2]string
	for i := range texts {
		texts[i] = strings.Repeat(fmt.Sprintf("peer %d holds this shared prefix and the chosen worker fetches it. ", i), 100)
		toks, err := s.cfg.Tokenizer.Encode(context.Background(), texts[i])
		if err != nil {
			t.Fatal(err)
		}
		if n := storeTokens(t, s, 1, toks); n < 2*selector.DefaultPeerMinBlocks {
			t.Fatalf("prompt has %d blocks; want a longer one", n)
		}
	}
	count := func(o string) float64 { return testutil.ToFloat64(s.m.peerHints.vec.WithLabelValues(o)) }
	ask := func(pin string, text string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"prompt": text, "max_tokens": 1})
		req := httptest.NewRequest("POST", "/v1/completions", bytes.NewReader(body))
		req.Header.Set(HeaderPinWorker, pin)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 || rec.Header().Get(HeaderWorker) != pin {
			t.Fatalf("pin %s: %d on worker %q: %s", pin, rec.Code, rec.Header().Get(HeaderWorker), rec.Body)
		}
	}
	want := func(step string, sent, pulled, unsent float64) {
		t.Helper()
		if g := [3]float64{count(peerSent), count(peerPulled), count(peerUnsent)}; g != [3]float64{sent, pulled, unsent} {
			t.Fatalf("%s: sent, pulled, unsent = %v, want %v", step, g, [3]float64{sent, pulled, unsent})
		}
	}
	want("start", 0, 0, 0)
	report.Store(true)
	ask("2", texts[0])
	want("mocker-like puller", 1, 1, 0)
	report.Store(false)
	ask("2", texts[1])
	want("engine without the trailer", 2, 1, 0)
	ask("1", texts[0])
	want("on the holder", 2, 1, 0)
	if hinted.Load() != 2 {
		t.Fatalf("worker 2 saw %d hinted requests, want 2", hinted.Load())
	}
	wk, _ := s.pool.Get(2)
	s.withPeerHint(http.Header{}, []byte(`{}`), wk, &selector.PeerHint{Peer: kvevents.Worker{ID: 9}, Blocks: 4})
	want("peer gone", 2, 1, 1)
}
