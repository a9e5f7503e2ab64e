package frontend

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/router"
)

// pdWorker is a fake vLLM worker with the NIXL connector: a request with
// do_remote_decode answers one token and kv_transfer_params naming this
// worker; any other request answers (JSON or SSE) and records the
// kv_transfer_params it got. fail makes every /v1 request answer 500;
// dead closes the connection (unreachable); transfer, when set, is the
// oai.TrailerKVTransfer a decode answer ends with (as the mocker's).
type pdWorker struct {
	*httptest.Server
	id         uint64
	fail, dead atomic.Bool
	transfer   atomic.Pointer[string]
	prefills   atomic.Int64
	decodes    atomic.Int64
	mu         sync.Mutex
	got        []*oai.KVTransferParams // per decode or aggregated request
	bodies     []map[string]any        // prefill bodies
}

func newPDWorker(t *testing.T, id uint64) *pdWorker {
	t.Helper()
	w := &pdWorker{id: id}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/load" {
			http.NotFound(rw, r)
			return
		}
		if w.dead.Load() {
			if c, _, err := rw.(http.Hijacker).Hijack(); err == nil {
				_ = c.Close()
			}
			return
		}
		if w.fail.Load() {
			writeJSON(rw, 500, map[string]any{"error": map[string]any{"message": "engine exploded", "type": "server_error"}})
			return
		}
		b, _ := io.ReadAll(r.Body)
		p, _ := oai.ParseKVTransferParams(b)
		if p != nil && p.DoRemoteDecode {
			w.prefills.Add(1)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			w.mu.Lock()
			w.bodies = append(w.bodies, m)
			w.mu.Unlock()
			engine, host, port := "w"+strconv.FormatUint(id, 10), "127.0.0.1", 5600+int(id)
			writeJSON(rw, 200, oai.Completion{ID: "p", Object: "text_completion", Choices: []oai.CompletionChoice{{Text: "x"}},
				KVTransferParams: &oai.KVTransferParams{DoRemotePrefill: true, RemoteEngineID: &engine, RemoteBlockIDs: []int{1, 2},
					RemoteHost: &host, RemotePort: &port, RemoteRequestID: r.Header.Get(HeaderReqID)}})
			return
		}
		w.decodes.Add(1)
		w.mu.Lock()
		w.got = append(w.got, p)
		w.mu.Unlock()
		if v := w.transfer.Load(); v != nil {
			rw.Header().Set(http.TrailerPrefix+oai.TrailerKVTransfer, *v)
		}
		if strings.Contains(string(b), `"stream":true`) {
			rw.Header().Set("Content-Type", "text/event-stream")
			for _, d := range []string{`{"choices":[{"text":"a"}]}`, `{"choices":[{"text":"b"}]}`, `[DONE]`} {
				_, _ = io.WriteString(rw, "data: "+d+"\n\n")
				rw.(http.Flusher).Flush()
			}
			return
		}
		writeJSON(rw, 200, map[string]any{"choices": []map[string]any{{"text": "ab"}}})
	}))
	t.Cleanup(w.Close)
	return w
}

func (w *pdWorker) lastParams() *oai.KVTransferParams {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.got) == 0 {
		return nil
	}
	return w.got[len(w.got)-1]
}

// newPDFleet is a frontend over prefill workers 1, 2 and decode workers
// 3, 4 (round-robin within each pool, so that failures are deterministic).
func newPDFleet(t *testing.T, mod func(*Config)) (*Server, []*pdWorker) {
	t.Helper()
	s := newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.Router.Disagg.Policy = router.DisaggAlways
		c.LoadPollInterval = -1
		if mod != nil {
			mod(c)
		}
	})
	var ws []*pdWorker
	for id := uint64(1); id <= 4; id++ {
		w := newPDWorker(t, id)
		role := router.RolePrefill
		if id > 2 {
			role = router.RoleDecode
		}
		if err := s.AddWorker(Worker{ID: id, URL: w.URL, Info: router.WorkerInfo{Role: role}}); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	return s, ws
}

func checkIdle(t *testing.T, s *Server) {
	t.Helper()
	if st := s.Router().Stats(); st.Active != 0 {
		t.Fatalf("load left: %+v", st)
	}
}

// TestDisaggTwoHops: the prefill hop gets the client's body with max_tokens
// 1, stream false, no stream_options and do_remote_decode; the decode hop
// gets the original request with the prefill answer's kv_transfer_params;
// the headers name both hops; no load is left.
func TestDisaggTwoHops(t *testing.T) {
	s, ws := newPDFleet(t, nil)
	for _, stream := range []bool{false, true} {
		body := `{"prompt":"tell me about caches","max_tokens":7,"stream":` + strconv.FormatBool(stream) +
			`,"stream_options":{"include_usage":true},"min_tokens":2}`
		rec := do(t, s.Handler(), "POST", "/v1/completions", body)
		pw, dw := rec.Header().Get(HeaderPrefillWorker), rec.Header().Get(HeaderWorker)
		if rec.Code != 200 || (pw != "1" && pw != "2") || (dw != "3" && dw != "4") || rec.Header().Get(HeaderPrefillOverlap) == "" {
			t.Fatalf("stream=%t: %d prefill %q decode %q: %s", stream, rec.Code, pw, dw, rec.Body.String())
		}
		if stream != strings.Contains(rec.Body.String(), "[DONE]") {
			t.Fatalf("stream=%t body %q", stream, rec.Body.String())
		}
		pid, _ := strconv.Atoi(pw)
		pre := ws[pid-1]
		pre.mu.Lock()
		pb := pre.bodies[len(pre.bodies)-1]
		pre.mu.Unlock()
		if pb["max_tokens"] != float64(1) || pb["stream"] != false || pb["stream_options"] != nil || pb["min_tokens"] != nil {
			t.Fatalf("prefill body %v", pb)
		}
		did, _ := strconv.Atoi(dw)
		p := ws[did-1].lastParams()
		if p == nil || !p.DoRemotePrefill || *p.RemoteEngineID != "w"+pw || len(p.RemoteBlockIDs) != 2 {
			t.Fatalf("decode got kv_transfer_params %+v", p)
		}
		checkIdle(t, s)
	}
	// The metrics count both requests' prefill hops and the transfer (0
	// bytes here: the prompt is shorter than one 64-token block).
	rec := do(t, s.Handler(), "GET", "/metrics", "")
	if !strings.Contains(rec.Body.String(), `kvrouter_disagg_hop_decisions_total{hop="prefill"} 2`) ||
		!strings.Contains(rec.Body.String(), "kvrouter_disagg_transfer_bytes_total") {
		t.Fatalf("metrics:\n%s", rec.Body.String())
	}
}

// TestDisaggPrefillRetry: a failing prefill worker is replaced by the other.
func TestDisaggPrefillRetry(t *testing.T) {
	s, ws := newPDFleet(t, nil)
	ws[0].fail.Store(true)
	for i := range 3 {
		rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hello there","max_tokens":3}`)
		if rec.Code != 200 || rec.Header().Get(HeaderPrefillWorker) != "2" {
			t.Fatalf("request %d: %d prefill %q: %s", i, rec.Code, rec.Header().Get(HeaderPrefillWorker), rec.Body.String())
		}
	}
	checkIdle(t, s)
}

// TestDisaggPrefillFallback: with the whole prefill pool failing, the
// request runs aggregated on a decode worker (no transfer parameters, no
// prefill headers).
func TestDisaggPrefillFallback(t *testing.T) {
	s, ws := newPDFleet(t, nil)
	ws[0].fail.Store(true)
	ws[1].fail.Store(true)
	rec := do(t, s.Handler(), "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	dw := rec.Header().Get(HeaderWorker)
	if rec.Code != 200 || rec.Header().Get(HeaderPrefillWorker) != "" || (dw != "3" && dw != "4") || !strings.Contains(rec.Body.String(), "[DONE]") {
		t.Fatalf("%d prefill %q decode %q: %s", rec.Code, rec.Header().Get(HeaderPrefillWorker), dw, rec.Body.String())
	}
	did, _ := strconv.Atoi(dw)
	if p := ws[did-1].lastParams(); p != nil {
		t.Fatalf("aggregated fallback sent kv_transfer_params %+v", p)
	}
	checkIdle(t, s)
}

// TestDisaggDecodeRetry: a decode worker that dies before answering is
// replaced, with a fresh prefill; when every decode worker fails the
// client gets one clean error.
func TestDisaggDecodeRetry(t *testing.T) {
	s, ws := newPDFleet(t, nil)
	ws[2].dead.Store(true)
	rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hello again","max_tokens":3,"stream":true}`)
	if rec.Code != 200 || rec.Header().Get(HeaderWorker) != "4" || !strings.Contains(rec.Body.String(), "[DONE]") {
		t.Fatalf("%d decode %q: %s", rec.Code, rec.Header().Get(HeaderWorker), rec.Body.String())
	}
	if n := ws[0].prefills.Load() + ws[1].prefills.Load(); n != 2 {
		t.Fatalf("%d prefills, want a fresh one for the retry", n)
	}
	checkIdle(t, s)

	s, ws = newPDFleet(t, nil)
	ws[2].fail.Store(true)
	ws[3].fail.Store(true)
	rec = do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"nobody decodes","max_tokens":3}`)
	var e struct {
		Error oai.Error `json:"error"`
	}
	if rec.Code != 502 || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Code != "worker_unreachable" {
		t.Fatalf("%d: %s", rec.Code, rec.Body.String())
	}
	checkIdle(t, s)
}

// TestDisaggConditional: with policy isl and a threshold above the prompt,
// the request runs aggregated on a decode worker.
func TestDisaggConditional(t *testing.T) {
	s, ws := newPDFleet(t, func(c *Config) {
		c.Router.Disagg.Policy = router.DisaggISL
		c.Router.Disagg.ISLThreshold = 1 << 20
	})
	rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"short","max_tokens":3}`)
	if rec.Code != 200 || rec.Header().Get(HeaderPrefillWorker) != "" || ws[0].prefills.Load()+ws[1].prefills.Load() != 0 {
		t.Fatalf("%d prefill %q: %s", rec.Code, rec.Header().Get(HeaderPrefillWorker), rec.Body.String())
	}
	checkIdle(t, s)
}

// TestRouteHop: POST /route places one hop for gateways that proxy
// themselves: "prefill" over the prefill pool, "decode" over the decode
// pool (with its transfer), an unknown hop is a 400.
func TestRouteHop(t *testing.T) {
	s, _ := newPDFleet(t, nil)
	prompt := strings.Repeat("route me somewhere nice ", 40) // a few full blocks
	for hop, want := range map[string][]string{"prefill": {"1", "2"}, "decode": {"3", "4"}, "": {"3", "4"}} {
		rec := do(t, s.Handler(), "POST", "/route", `{"prompt":"`+prompt+`","hop":"`+hop+`"}`)
		var out RouteResponse
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			t.Fatalf("hop %q: %d %s", hop, rec.Code, rec.Body.String())
		}
		if w := strconv.FormatUint(out.Worker, 10); w != want[0] && w != want[1] || out.Hop != hop {
			t.Fatalf("hop %q: worker %d hop %q, want one of %v", hop, out.Worker, out.Hop, want)
		}
		// Only the decode hop pulls KV: the prompt blocks its worker lacks.
		wantTransfer := 0
		if hop == "decode" {
			wantTransfer = out.Blocks - out.OverlapBlocks[0]
		}
		if out.Blocks == 0 || out.TransferBlocks != wantTransfer {
			t.Fatalf("hop %q: transfer_blocks %d of %d prompt blocks (%v cached), want %d", hop, out.TransferBlocks, out.Blocks, out.OverlapBlocks, wantTransfer)
		}
	}
	if rec := do(t, s.Handler(), "POST", "/route", `{"prompt":"x","hop":"sideways"}`); rec.Code != 400 {
		t.Fatalf("unknown hop: %d %s", rec.Code, rec.Body.String())
	}
	checkIdle(t, s)
}
