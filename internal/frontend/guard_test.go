package frontend

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
)

// engineStub is a fake vLLM engine on 127.0.0.1 that records every body
// it receives. A request whose kv_transfer_params say do_remote_decode is
// a prefill: it answers prefillAnswer (a valid NIXL answer by default).
// Any other request is refused with vLLM's 400 when its
// kv_transfer_params are not an object, else answered (SSE when asked to
// stream).
type engineStub struct {
	*httptest.Server
	prefillAnswer atomic.Pointer[string]
	mu            sync.Mutex
	bodies        []map[string]json.RawMessage
}

const validPrefillAnswer = `{"id":"p","object":"text_completion","choices":[{"text":"x"}],"kv_transfer_params":{"do_remote_prefill":true,"do_remote_decode":false,"remote_engine_id":"e1","remote_block_ids":[1,2],"remote_host":"127.0.0.1","remote_port":5601,"tp_size":1}}`

func newEngineStub(t testing.TB) *engineStub {
	t.Helper()
	e := &engineStub{}
	a := validPrefillAnswer
	e.prefillAnswer.Store(&a)
	e.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") {
			http.NotFound(rw, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		e.mu.Lock()
		e.bodies = append(e.bodies, m)
		e.mu.Unlock()
		kv := bytes.TrimSpace(m["kv_transfer_params"])
		var p struct {
			DoRemoteDecode bool `json:"do_remote_decode"`
		}
		if len(kv) > 0 && kv[0] == '{' && json.Unmarshal(kv, &p) == nil && p.DoRemoteDecode {
			rw.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(rw, *e.prefillAnswer.Load())
			return
		}
		if len(kv) > 0 && kv[0] != '{' && string(kv) != "null" {
			writeJSON(rw, 400, map[string]any{"error": map[string]any{"message": "kv_transfer_params: Input should be a valid dictionary",
				"type": "invalid_request_error"}})
			return
		}
		if string(m["stream"]) == "true" {
			rw.Header().Set("Content-Type", "text/event-stream")
			for _, d := range []string{`{"choices":[{"text":"a"}]}`, `{"choices":[{"text":"b"}]}`, `[DONE]`} {
				_, _ = io.WriteString(rw, "data: "+d+"\n\n")
			}
			return
		}
		writeJSON(rw, 200, map[string]any{"object": "text_completion", "choices": []map[string]any{{"text": "ab"}}})
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *engineStub) received() []map[string]json.RawMessage {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]map[string]json.RawMessage(nil), e.bodies...)
}

// clientTransfer is a client's attempt at the engines' transfer protocols:
// a decode worker told to hold its blocks, a host and port it names, and
// the same through vllm_xargs.
const clientTransfer = `"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":true,"remote_host":"198.51.100.7","remote_port":9,"remote_engine_id":"evil","remote_block_ids":[1,2,3]},` +
	`"bootstrap_host":"198.51.100.7","bootstrap_port":9,"bootstrap_room":7,"vllm_xargs":{"kv_transfer_params":"x","keep":1},`

// checkNoClientTransfer fails when a body an engine got carries a
// client's transfer field: kv_transfer_params other than the router's
// (the prefill request's or a checked prefill answer's, engine "e1"), a
// bootstrap field, or vllm_xargs.kv_transfer_params.
func checkNoClientTransfer(t *testing.T, where string, bodies []map[string]json.RawMessage) {
	t.Helper()
	if len(bodies) == 0 {
		t.Fatalf("%s: the engine got no request", where)
	}
	for i, m := range bodies {
		if kv, ok := m["kv_transfer_params"]; ok && (bytes.Contains(kv, []byte("evil")) || bytes.Contains(kv, []byte("198.51.100.7"))) {
			t.Errorf("%s: body %d has the client's kv_transfer_params %s", where, i, kv)
		}
		for _, k := range []string{"bootstrap_host", "bootstrap_port", "bootstrap_room"} {
			if v, ok := m[k]; ok {
				t.Errorf("%s: body %d has the client's %s %s", where, i, k, v)
			}
		}
		if x := m["vllm_xargs"]; !bytes.Equal(x, []byte(`{"keep":1}`)) {
			t.Errorf("%s: body %d vllm_xargs %s, want {\"keep\":1}", where, i, x)
		}
	}
}

// TestClientTransferFieldsStripped: a client's kv_transfer_params,
// bootstrap fields and vllm_xargs.kv_transfer_params reach no engine, on
// every proxy path: aggregated completions (streamed and not) and chat,
// a retry after an unreachable worker, both hops of a disaggregated
// request, and the aggregated fallback after the prefill pool failed.
// (Before: all forwarded unchanged; a do_remote_decode made the engine
// hold the prompt's blocks for its timeout, uncounted by the router.)
func TestClientTransferFieldsStripped(t *testing.T) {
	agg := func(t *testing.T, urls ...string) *Server {
		s := newServerWith(t, false, func(c *Config) {
			c.Router.Policy = router.PolicyRoundRobin
			c.LoadPollInterval = -1
		})
		for i, u := range urls {
			if err := s.AddWorker(Worker{ID: uint64(i + 1), URL: u}); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	for _, tc := range []struct{ name, path, body string }{
		{"completions", "/v1/completions", `{"prompt":"hello there",` + clientTransfer + `"max_tokens":2}`},
		{"completions_stream", "/v1/completions", `{"prompt":[1,2,3],` + clientTransfer + `"stream":true}`},
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],` + clientTransfer + `"max_tokens":2}`},
		{"case_and_escapes", "/v1/completions", `{"prompt":"x","KV_Transfer_Params":{"remote_host":"198.51.100.7"},"kv_transfer_param\u0073":{"remote_engine_id":"evil"},"vllm_xargs":{"keep":1}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngineStub(t)
			s := agg(t, e.URL)
			if rec := do(t, s.Handler(), "POST", tc.path, tc.body); rec.Code != 200 {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			checkNoClientTransfer(t, tc.name, e.received())
			if metricValue(t, s, `kvrouter_client_fields_stripped_total{field="kv_transfer_params"}`) < 1 {
				t.Error("stripped kv_transfer_params not counted")
			}
		})
	}
	t.Run("retry", func(t *testing.T) {
		e := newEngineStub(t)
		s := agg(t, deadURL(t), e.URL)
		if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hello",`+clientTransfer+`"max_tokens":2}`); rec.Code != 200 {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		checkNoClientTransfer(t, "retry", e.received())
	})
	t.Run("disaggregated", func(t *testing.T) {
		s, pre, dec := stubPDFleet(t, 0)
		if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hello",`+clientTransfer+`"stream":true}`); rec.Code != 200 {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		checkNoClientTransfer(t, "prefill hop", pre.received())
		checkNoClientTransfer(t, "decode hop", dec.received())
		if kv := dec.received()[0]["kv_transfer_params"]; !bytes.Contains(kv, []byte(`"remote_engine_id":"e1"`)) {
			t.Errorf("decode hop got %s, not the prefill answer's", kv)
		}
	})
	t.Run("aggregated_fallback", func(t *testing.T) {
		s, pre, dec := stubPDFleet(t, 0)
		bad := `{"error":"no"}`
		pre.prefillAnswer.Store(&bad) // no kv_transfer_params: the prefill hop fails
		if rec := do(t, s.Handler(), "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],`+clientTransfer+`"max_tokens":2}`); rec.Code != 200 {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		checkNoClientTransfer(t, "fallback", dec.received())
		if kv, ok := dec.received()[0]["kv_transfer_params"]; ok {
			t.Errorf("aggregated fallback sent kv_transfer_params %s", kv)
		}
	})
}

// metricValue is the value of the GET /metrics sample named series
// (name{labels} as exported), 0 when absent.
func metricValue(t *testing.T, s *Server, series string) float64 {
	t.Helper()
	for _, l := range metricLines(t, s) {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	return 0
}

// TestInvalidPrefillAnswerFallsBack: a prefill answer whose
// kv_transfer_params are not a valid NIXL answer is never passed to the
// decode worker: it is a prefill failure (counted), and with no other
// prefill worker the request is served aggregated on the decode worker.
// (Before: "not-an-object" went to the decode worker, whose 400 reached
// the client as invalid_request_error.)
func TestInvalidPrefillAnswerFallsBack(t *testing.T) {
	for _, answer := range []string{
		`{"choices":[{"text":"x"}],"kv_transfer_params":"not-an-object"}`,
		`{"choices":[{"text":"x"}],"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"e1"}}`,
		`{"choices":[{"text":"x"}],"kv_transfer_params":{"do_remote_prefill":true,"do_remote_decode":true,"remote_engine_id":"e1","remote_block_ids":[1]}}`,
		`{"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"e1","remote_block_ids":[1],"remote_port":"80"}}`,
	} {
		s, pre, dec := stubPDFleet(t, 2)
		pre.prefillAnswer.Store(&answer)
		rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hello","max_tokens":2}`)
		if rec.Code != 200 {
			t.Fatalf("answer %s: client got %d %s", answer, rec.Code, rec.Body)
		}
		got := dec.received()
		if len(got) != 1 {
			t.Fatalf("answer %s: decode worker got %d requests", answer, len(got))
		}
		if kv, ok := got[0]["kv_transfer_params"]; ok {
			t.Errorf("answer %s: decode worker got kv_transfer_params %s", answer, kv)
		}
		if n := metricValue(t, s, "kvrouter_disagg_prefill_invalid_total"); n != 1 {
			t.Errorf("answer %s: %v invalid prefill answers counted, want 1", answer, n)
		}
		if n := metricValue(t, s, `kvrouter_disagg_fallbacks_total{kind="aggregated"}`); n != 1 {
			t.Errorf("answer %s: %v aggregated fallbacks, want 1", answer, n)
		}
		checkIdle(t, s)
	}
}

// stubPDFleet is a frontend over prefill engine stub 1 and decode engine
// stub 2 (disaggregating every request).
func stubPDFleet(t *testing.T, retries int) (*Server, *engineStub, *engineStub) {
	t.Helper()
	pre, dec := newEngineStub(t), newEngineStub(t)
	s := newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.Router.Disagg.Policy = router.DisaggAlways
		c.LoadPollInterval = -1
		c.Retries = retries
	})
	for id, w := range map[uint64]*engineStub{1: pre, 2: dec} {
		role := router.RolePrefill
		if id == 2 {
			role = router.RoleDecode
		}
		if err := s.AddWorker(Worker{ID: id, URL: w.URL, Info: router.WorkerInfo{Role: role}}); err != nil {
			t.Fatal(err)
		}
	}
	return s, pre, dec
}

// trackFrom is a tracked /route from addr with bearer key ("" = none).
func trackFrom(t *testing.T, s *Server, addr, key, prompt string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/route", strings.NewReader(`{"prompt":`+strconv.Quote(prompt)+`,"track":true}`))
	req.RemoteAddr = addr
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	s.Handler().ServeHTTP(rec, req)
	return rec.Code
}

// TestBookingsOpenAPIOwnerAndTotal: without API keys a bearer header is
// not verified, so it does not name the caller: 100 tracked bookings from
// one address with a fresh fake key each get MaxTrackedPerKey (64), the
// rest 429 (before: 100 of 100). All callers together are bounded in
// count and bytes, exported as kvrouter_store_*{store="bookings"}.
func TestBookingsOpenAPIOwnerAndTotal(t *testing.T) {
	w := newEngineStub(t)
	s := newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.LoadPollInterval = -1
		c.Hardening.BookingTTL = time.Hour
	})
	if err := s.AddWorker(Worker{ID: 1, URL: w.URL}); err != nil {
		t.Fatal(err)
	}
	ok := 0
	for i := range 100 {
		if trackFrom(t, s, "192.0.2.1:4000", "fake-"+strconv.Itoa(i), "hello") == 200 {
			ok++
		}
	}
	if ok != DefaultHardening().MaxTrackedPerKey {
		t.Errorf("%d of 100 tracked bookings accepted with fake keys from one address, want %d", ok, DefaultHardening().MaxTrackedPerKey)
	}
	if c := trackFrom(t, s, "192.0.2.2:4000", "", "hello"); c != 200 {
		t.Errorf("another address locked out: %d", c)
	}
	if n := metricValue(t, s, `kvrouter_store_entries{store="bookings"}`); n != float64(ok+1) {
		t.Errorf("bookings store holds %v, want %d", n, ok+1)
	}

	// The total, in entries and in bytes, over many addresses.
	s = newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.LoadPollInterval = -1
		c.Hardening.BookingTTL = time.Hour
		c.Hardening.MaxBookings = 3
	})
	if err := s.AddWorker(Worker{ID: 1, URL: w.URL}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		c := trackFrom(t, s, "192.0.2."+strconv.Itoa(10+i)+":1", "", "hello")
		if want := map[bool]int{true: 200, false: 429}[i < 3]; c != want {
			t.Errorf("booking %d from its own address: %d, want %d", i, c, want)
		}
	}
	if n := metricValue(t, s, `kvrouter_store_limit_entries{store="bookings"}`); n != 3 {
		t.Errorf("limit_entries %v", n)
	}
	long := strings.Repeat("word ", 20000) // ~20k tokens: 8 bytes a block more
	s = newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.LoadPollInterval = -1
		c.Hardening.BookingTTL = time.Hour
		c.Hardening.MaxBookingBytes = 2 * bookingOverhead
	})
	if err := s.AddWorker(Worker{ID: 1, URL: w.URL}); err != nil {
		t.Fatal(err)
	}
	if c := trackFrom(t, s, "192.0.2.30:1", "", long); c != 429 {
		t.Errorf("a booking beyond the byte bound: %d, want 429", c)
	}
	if c := trackFrom(t, s, "192.0.2.31:1", "", "hello"); c != 200 {
		t.Errorf("a small booking within the byte bound: %d", c)
	}
	if n := metricValue(t, s, `kvrouter_store_bytes{store="bookings"}`); n <= 0 {
		t.Errorf("bookings store bytes %v", n)
	}
}

// TestSlowReaderCut: a client that stops reading a long stream is cut
// once a write to it has waited StreamWriteTimeout: the engine request
// is cancelled, the load released, the cut counted. (Before: the stream,
// its engine request and its load were held as long as the client kept
// the connection open.)
func TestSlowReaderCut(t *testing.T) {
	cancelled := make(chan struct{})
	chunk := "data: {\"choices\":[{\"text\":\"" + strings.Repeat("x", 4096) + "\"}]}\n\n"
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		defer close(cancelled)
		w.Header().Set("Content-Type", "text/event-stream")
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	defer engine.Close()
	s := newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.LoadPollInterval = -1
		c.Hardening.StreamWriteTimeout = 200 * time.Millisecond
	})
	if err := s.AddWorker(Worker{ID: 1, URL: engine.URL}); err != nil {
		t.Fatal(err)
	}
	addr := serveOn(t, s)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"prompt":"hello","stream":true}`
	if _, err := io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	// The client reads nothing from here on.
	select {
	case <-cancelled:
	case <-time.After(20 * time.Second): // the test's own bound, not a speed claim
		t.Fatal("the engine request of a client that stopped reading was never cancelled")
	}
	waitFor(t, "the load released", func() bool { return s.Router().Stats().Active == 0 })
	waitFor(t, "the cut counted", func() bool {
		return metricValue(t, s, "kvrouter_stream_write_timeouts_total") == 1 &&
			metricValue(t, s, `kvrouter_proxied_total{outcome="client_slow"}`) == 1
	})
	if d := DefaultHardening().StreamWriteTimeout; d != 30*time.Second {
		t.Errorf("default stream write timeout %v, want 30s", d)
	}
}

// TestEngineAnswersBounded: what the router buffers of an engine answer
// is bounded (Hardening.MaxAnswerBytes). A folded non-streaming answer
// beyond it, or with a choice or tool-call index out of range, is a 502;
// a JSON answer beyond it is relayed whole, unbuffered. (Before: tool
// index -1 panicked the handler, index 1e9 allocated 1e9 entries, and
// both kinds of answer were buffered whole.)
func TestEngineAnswersBounded(t *testing.T) {
	var answer atomic.Pointer[string]
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		a := *answer.Load()
		if strings.HasPrefix(a, "{") || !bytes.Contains(b, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, a)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, a)
	}))
	defer engine.Close()
	s := newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.LoadPollInterval = -1
		c.Hardening.MaxAnswerBytes = 64 << 10
	})
	if err := s.AddWorker(Worker{ID: 1, URL: engine.URL}); err != nil {
		t.Fatal(err)
	}
	chat := `{"messages":[{"role":"user","content":"hi"}]}`
	sse := func(chunks ...string) string {
		var b strings.Builder
		for _, c := range chunks {
			b.WriteString("data: " + c + "\n\n")
		}
		return b.String() + "data: [DONE]\n\n"
	}
	tool := func(i int) string {
		return `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":` + strconv.Itoa(i) + `,"function":{"name":"f"}}]}}]}`
	}
	big := `{"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("y", 8<<10) + `"}}]}`
	for _, tc := range []struct {
		name, answer string
		code         int
	}{
		{"tool_index_negative", sse(tool(-1)), 502},
		{"tool_index_huge", sse(tool(1 << 30)), 502},
		{"choice_index_huge", sse(`{"choices":[{"index":100000000,"delta":{"content":"a"}}]}`), 502},
		{"tool_indices_within_bound", sse(tool(0), tool(3)), 200},
		{"folded_too_large", sse(big, big, big, big, big, big, big, big, big), 502},
	} {
		answer.Store(&tc.answer)
		rec := do(t, s.Handler(), "POST", "/v1/chat/completions", chat)
		if rec.Code != tc.code {
			t.Errorf("%s: %d %.200s, want %d", tc.name, rec.Code, rec.Body, tc.code)
		}
	}
	if n := metricValue(t, s, `kvrouter_engine_answer_too_large_total{kind="folded"}`); n != 1 {
		t.Errorf("folded answers too large counted %v, want 1", n)
	}
	// A JSON answer (logprobs: not folded) beyond the bound: relayed whole.
	long := `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("z", 200<<10) + `"}}]}`
	answer.Store(&long)
	rec := do(t, s.Handler(), "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"logprobs":true}`)
	if rec.Code != 200 || rec.Body.String() != long {
		t.Errorf("long JSON answer: %d, %d of %d bytes", rec.Code, rec.Body.Len(), len(long))
	}
	if n := metricValue(t, s, `kvrouter_engine_answer_too_large_total{kind="json"}`); n != 1 {
		t.Errorf("JSON answers too large counted %v, want 1", n)
	}
	checkIdle(t, s)
}
