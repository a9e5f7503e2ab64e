package frontend

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/kvevents"
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
