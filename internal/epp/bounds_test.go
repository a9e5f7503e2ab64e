package epp_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/kvrouter/kvrouter/internal/frontend"
	dto "github.com/prometheus/client_model/go"
)

// sample reads one series of the picker's registry: name, and a label
// pair when label is "k=v"; -1 when absent.
func (p *picker) sample(t *testing.T, name, label string) float64 {
	t.Helper()
	mfs, err := p.f.Frontend().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	k, v, _ := strings.Cut(label, "=")
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label != "" && !hasLabel(m, k, v) {
				continue
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == k && lp.GetValue() == v {
			return true
		}
	}
	return false
}

// TestOversizeBody: a request body over --max-body-bytes is an
// ImmediateResponse 413, in either body mode, and the picker keeps no
// body after it (the epp_request_bodies store is back to empty). It used
// to be a 400: the body was cut to its last chunk, which the pick then
// parsed as JSON.
func TestOversizeBody(t *testing.T) {
	const limit = 64 << 10
	p := startPickerWith(t, 2, func(fc *frontend.Config) { fc.MaxBodyBytes = limit })
	big := completion(strings.Repeat("too long ", 3*limit/9), false)
	for _, m := range []struct {
		name  string
		mode  filterv3.ProcessingMode_BodySendMode
		chunk int
	}{
		{"full-duplex", filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, 16 << 10},
		{"full-duplex-last-chunk", filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, limit + 1},
		{"buffered", filterv3.ProcessingMode_BUFFERED, 0},
	} {
		t.Run(m.name, func(t *testing.T) {
			x := p.envoy(t, m.mode, m.chunk).request("/v1/completions", nil, big, nil)
			if x.immediate == nil || x.immediate.GetStatus().GetCode() != 413 {
				t.Fatalf("body of %d bytes over a limit of %d: want ImmediateResponse 413, got %+v", len(big), limit, x.immediate)
			}
			if !bytes.Contains(x.immediate.GetBody(), []byte("request_too_large")) {
				t.Fatalf("413 body %q: want serve's request_too_large error", x.immediate.GetBody())
			}
		})
	}
	// A body just within the limit is still picked.
	ok := completion(strings.Repeat("a", limit/2), false)
	if x := p.envoy(t, filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, 16<<10).request("/v1/completions", nil, ok, nil); x.immediate != nil {
		t.Fatalf("body of %d bytes within %d: %+v", len(ok), limit, x.immediate)
	}
	waitFor(t, "no request body held", func() bool {
		return p.sample(t, "kvrouter_store_entries", "store=epp_request_bodies") == 0 &&
			p.sample(t, "kvrouter_store_bytes", "store=epp_request_bodies") == 0
	})
	if got := p.sample(t, "kvrouter_store_limit_entries", "store=epp_request_bodies"); got != 512 {
		t.Fatalf("epp_request_bodies limit %v, want serve's --max-bodies default 512", got)
	}
}

// TestClientKVTransferParams: a client's own kv_transfer_params (vLLM's
// disaggregation parameters: a remote host to pull KV blocks from, or
// blocks to hold for a pull) never reach an engine: the picker refuses
// the request with a 400 naming the field, in either mode and however the
// key is spelled in JSON. A null value is what engines read as absent,
// and passes.
func TestClientKVTransferParams(t *testing.T) {
	p := startPicker(t, 2)
	params := `{"do_remote_prefill":true,"remote_host":"10.9.9.9","remote_port":5600,"remote_engine_id":"x","remote_block_ids":[1,2]}`
	for _, m := range modes {
		e := p.envoy(t, m.mode, m.chunk)
		for _, c := range []struct {
			name, path, body string
		}{
			{"completions", "/v1/completions", `{"model":"m","prompt":"hi","max_tokens":2,"kv_transfer_params":` + params + `}`},
			{"chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"kv_transfer_params":{"do_remote_decode":true}}`},
			{"escaped key", "/v1/completions", `{"model":"m","prompt":"hi","kv\u005ftransfer_params":` + params + `}`},
			{"other path", "/v1/embeddings", `{"model":"m","input":"hi","kv_transfer_params":` + params + `}`},
		} {
			x := e.request(c.path, nil, []byte(c.body), nil)
			if x.immediate == nil || x.immediate.GetStatus().GetCode() != 400 ||
				!bytes.Contains(x.immediate.GetBody(), []byte("kv_transfer_params")) {
				t.Fatalf("%s/%s: want ImmediateResponse 400 naming kv_transfer_params, got immediate %+v, pick %q", m.name, c.name, x.immediate, x.dest)
			}
		}
		for _, body := range []string{
			`{"model":"m","prompt":"hi","max_tokens":2,"kv_transfer_params":null}`,
			`{"model":"m","prompt":"the field kv_transfer_params in a prompt is text","max_tokens":2}`,
		} {
			x := e.request("/v1/completions", nil, []byte(body), nil)
			if x.immediate != nil || x.dest == "" {
				t.Fatalf("%s: %s: want a pick, got %+v", m.name, body, x.immediate)
			}
			x.cancel()
		}
	}
	waitFor(t, "loads freed", p.idle)
}

// TestLongAnswerLine: an SSE answer with a line far over the parse bound
// (64 MiB without a newline) goes to the client unchanged, chunk by
// chunk, while the picker holds at most about frontend.MaxResponseLine
// for it; its parsing is given up (counted) and the request is still
// freed at the end. The picker used to keep the whole line: heap +64 MiB
// and more for this one stream.
func TestLongAnswerLine(t *testing.T) {
	p := startPicker(t, 1)
	e := p.envoy(t, filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, 64)
	x := e.request("/v1/completions", nil, completion("hello", true), nil)
	// Not respHeaders: its header map starts with a JSON content type.
	e.step(x, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":status", RawValue: []byte("200")},
			{Key: "content-type", RawValue: []byte("text/event-stream; charset=utf-8")}}}}}})
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	const total = 64 << 20
	maxHeld := 0.0
	for sent := 0; sent < total; sent += len(chunk) {
		r := e.step(x, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
			ResponseBody: &extprocv3.HttpBody{Body: chunk}}})
		if got := r.GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetBody(); !bytes.Equal(got, chunk) {
			t.Fatalf("chunk at %d: the client got %d bytes, want the %d sent unchanged", sent, len(got), len(chunk))
		}
		if sent%(8<<20) == 0 {
			maxHeld = max(maxHeld, p.sample(t, "kvrouter_store_bytes", "store=epp_answer_buffers"))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	grew := int64(ms.HeapAlloc) - int64(base)
	t.Logf("heap %d MiB -> %d MiB with the line open", base>>20, ms.HeapAlloc>>20)
	if grew > 24<<20 {
		t.Fatalf("heap grew by %d MiB for one open stream with a %d MiB line; want the line bounded", grew>>20, total>>20)
	}
	if maxHeld > 2*frontend.MaxResponseLine {
		t.Fatalf("epp_answer_buffers held %v bytes, want at most ~%d", maxHeld, frontend.MaxResponseLine)
	}
	if got := p.sample(t, "kvrouter_epp_answers_unparsed_total", ""); got != 1 {
		t.Fatalf("kvrouter_epp_answers_unparsed_total = %v, want 1", got)
	}
	tail := []byte("\n\ndata: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n")
	r := e.step(x, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
		ResponseBody: &extprocv3.HttpBody{Body: tail, EndOfStream: true}}})
	if got := r.GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse(); !bytes.Equal(got.GetBody(), tail) || !got.GetEndOfStream() {
		t.Fatalf("last chunk relayed as %q (end %v)", got.GetBody(), got.GetEndOfStream())
	}
	x.close(t)
	waitFor(t, "the request freed and its buffer released", func() bool {
		return p.idle() && p.sample(t, "kvrouter_store_bytes", "store=epp_answer_buffers") == 0 &&
			p.sample(t, "kvrouter_store_entries", "store=epp_answer_buffers") == 0
	})
}

// TestLongSubsetHint: a subset hint of 200000 endpoints (the proxy's
// metadata, bounded only by the message size), resolved in one pass over
// the list and the workers, still restricts the pick to the one known
// worker it names.
func TestLongSubsetHint(t *testing.T) {
	p := startPicker(t, 4)
	want := p.endpoint(t, 3)
	subset := make([]string, 0, 200001)
	for i := range 200000 {
		subset = append(subset, fmt.Sprintf("10.%d.%d.%d:8000", i>>16, i>>8&255, i&255))
	}
	subset = append(subset, want)
	e := p.envoy(t, filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, 0)
	x := e.request("/v1/completions", nil, completion("pinned by a long hint", false), subset)
	if x.immediate != nil || x.dest != want {
		t.Fatalf("long subset hint: pick %q (immediate %v), want %q", x.dest, x.immediate, want)
	}
	x.cancel()
}
