package adversarial

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/kvrouter/kvrouter/internal/e2e"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// startEPP runs kvrouter-epp over one mocker (static worker, no NATS)
// and returns its HTTP side (for /metrics) and an ext_proc client.
func startEPP(t *testing.T, extra ...string) (*e2e.Router, extprocv3.ExternalProcessorClient) {
	t.Helper()
	m := e2e.StartMocker(t, bins.Kvrouter, 1, "", "--speedup-ratio", "0", "--no-register")
	ports := e2e.FreePorts(t, 2)
	r := &e2e.Router{Name: "epp", Port: ports[0]}
	r.Proc = e2e.Start(t, "epp", bins.EPP, append([]string{"--no-nats",
		"--addr", "127.0.0.1:" + strconv.Itoa(ports[0]), "--grpc-addr", "127.0.0.1:" + strconv.Itoa(ports[1]),
		"--worker", "http://127.0.0.1:" + strconv.Itoa(m.Port) + ",id=1", "--admin-key", admin}, extra...)...)
	r.WaitReady(t, 60*time.Second)
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(ports[1]), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return r, extprocv3.NewExternalProcessorClient(conn)
}

// eppStream opens one request's stream in full-duplex mode and sends its
// headers (the body follows).
func eppStream(t *testing.T, c extprocv3.ExternalProcessorClient) extprocv3.ExternalProcessor_ProcessClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := c.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mode := filterv3.ProcessingMode_FULL_DUPLEX_STREAMED
	err = st.Send(&extprocv3.ProcessingRequest{
		ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: mode, ResponseBodyMode: mode},
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":path", RawValue: []byte("/v1/completions")},
				{Key: ":method", RawValue: []byte("POST")}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func bodyMsg(b []byte, eos bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
		RequestBody: &extprocv3.HttpBody{Body: b, EndOfStream: eos}}}
}

// TestEPPOversizeBody: a 100 MiB request body streamed to the endpoint
// picker is answered with an ImmediateResponse 413 once it passes
// --max-body-bytes (8 MiB), not read further, and the picker keeps
// serving. It used to be a 400 (the last chunk parsed as JSON). A
// client's own kv_transfer_params is a 400 naming the field.
func TestEPPOversizeBody(t *testing.T) {
	skipShort(t)
	r, c := startEPP(t)
	st := eppStream(t, c)
	answer := make(chan *extprocv3.ProcessingResponse, 1)
	go func() {
		resp, _ := st.Recv()
		answer <- resp
	}()
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	var got *extprocv3.ProcessingResponse
	sent := 0
send:
	for sent < 100<<20 {
		select {
		case got = <-answer:
			break send
		default:
		}
		if err := st.Send(bodyMsg(chunk, sent+len(chunk) >= 100<<20)); err != nil {
			break
		}
		sent += len(chunk)
	}
	if got == nil {
		got = <-answer
	}
	if code := got.GetImmediateResponse().GetStatus().GetCode(); code != 413 {
		t.Fatalf("100 MiB body: answer %v, want ImmediateResponse 413", got)
	}
	t.Logf("413 after %d MiB sent", sent>>20)

	st = eppStream(t, c)
	if err := st.Send(bodyMsg([]byte(`{"model":"kvrouter-mock","prompt":"hi","kv_transfer_params":{"do_remote_prefill":true,"remote_host":"10.1.2.3","remote_port":5600}}`), true)); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if im := resp.GetImmediateResponse(); im.GetStatus().GetCode() != 400 || !strings.Contains(string(im.GetBody()), "kv_transfer_params") {
		t.Fatalf("client kv_transfer_params: answer %v, want ImmediateResponse 400 naming the field", resp)
	}
	if r.Proc.Exited() {
		t.Fatalf("epp exited: %s", r.Proc.ExitReport())
	}
	until(t, 20*time.Second, "no request body held", func() bool {
		return metric(t, r, `kvrouter_store_entries{store="epp_request_bodies"}`) == 0
	})
}

// TestEPPLongAnswerLine: after a pick, a text/event-stream answer of
// 256 MiB without a newline passes through the picker unchanged while
// its heap stays flat (the carried line is bounded at 1 MiB, the
// stream's parsing given up and counted). The picker used to keep the
// whole line: heap +400 MiB, RSS 1.5 GB for 400 MiB.
func TestEPPLongAnswerLine(t *testing.T) {
	skipShort(t)
	r, c := startEPP(t)
	st := eppStream(t, c)
	if err := st.Send(bodyMsg([]byte(`{"model":"kvrouter-mock","prompt":"hello","stream":true,"max_tokens":4}`), true)); err != nil {
		t.Fatal(err)
	}
	for { // the pick (headers answer), then the echoed body
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if im := resp.GetImmediateResponse(); im != nil {
			t.Fatalf("no pick: %v", im)
		}
		if resp.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetEndOfStream() {
			break
		}
	}
	step := func(req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
		t.Helper()
		if err := st.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	step(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":status", RawValue: []byte("200")},
			{Key: "content-type", RawValue: []byte("text/event-stream")}}}}}})
	heap0 := metric(t, r, "go_memstats_heap_inuse_bytes")
	chunk := bytes.Repeat([]byte("z"), 64<<10)
	const total = 256 << 20
	for sent := 0; sent < total; sent += len(chunk) {
		resp := step(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
			ResponseBody: &extprocv3.HttpBody{Body: chunk}}})
		if got := resp.GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetBody(); !bytes.Equal(got, chunk) {
			t.Fatalf("chunk at %d MiB relayed as %d bytes, want the %d sent", sent>>20, len(got), len(chunk))
		}
	}
	heap1 := metric(t, r, "go_memstats_heap_inuse_bytes")
	held := metric(t, r, `kvrouter_store_bytes{store="epp_answer_buffers"}`)
	t.Logf("heap in use %.0f MiB -> %.0f MiB with a %d MiB line open; answer buffers %.0f bytes", heap0/(1<<20), heap1/(1<<20), total>>20, held)
	if heap1-heap0 > 96<<20 {
		t.Errorf("heap grew %.0f MiB over one open stream's %d MiB line", (heap1-heap0)/(1<<20), total>>20)
	}
	if held > 2<<20 {
		t.Errorf("epp_answer_buffers holds %.0f bytes, want at most ~1 MiB", held)
	}
	if n := metric(t, r, "kvrouter_epp_answers_unparsed_total"); n != 1 {
		t.Errorf("kvrouter_epp_answers_unparsed_total = %v, want 1", n)
	}
	step(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
		ResponseBody: &extprocv3.HttpBody{Body: []byte("\n\ndata: [DONE]\n\n"), EndOfStream: true}}})
	_ = st.CloseSend()
	until(t, 20*time.Second, "the answer buffer released", func() bool {
		return metric(t, r, `kvrouter_store_bytes{store="epp_answer_buffers"}`) == 0
	})
}

// TestFlagRangesRefused: the built binary, given a numeric flag (or its
// environment variable) out of range, exits at once with an error naming
// the flag and the range, before it allocates or listens: serve
// --index-writers 100000000 used to allocate 8.5 GB within a minute and
// ignore SIGTERM; up --workers 100000 opened listeners without bound;
// the negative values exited naming nothing.
func TestFlagRangesRefused(t *testing.T) {
	skipShort(t)
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"serve", "--no-nats", "--index-writers", "100000000"}, "--index-writers"},
		{nil, []string{"serve", "--no-nats", "--jump-stride", "-5"}, "--jump-stride"},
		{nil, []string{"serve", "--no-nats", "--index-writers", "-1"}, "--index-writers"},
		{nil, []string{"serve", "--no-nats", "--stale-limit", "-1s"}, "--stale-limit"},
		{nil, []string{"serve", "--no-nats", "--retries", "-1"}, "--retries"},
		{nil, []string{"serve", "--no-nats", "--max-body-bytes", "-1"}, "--max-body-bytes"},
		{nil, []string{"serve", "--no-nats", "--snapshot-keep", "-1"}, "--snapshot-keep"},
		{[]string{"KVROUTER_INDEX_WRITERS=100000000"}, []string{"epp", "--no-nats"}, "KVROUTER_INDEX_WRITERS"},
		{nil, []string{"up", "--workers", "100000", "--port", "0"}, "--workers"},
		{nil, []string{"mocker", "--num-blocks", "-1"}, "--num-blocks"},
		{nil, []string{"bridge", "--zmq", "tcp://127.0.0.1:1", "--worker-id", "1", "--dp-size", "100000"}, "--dp-size"},
	} {
		bin, args := bins.Kvrouter, c.args
		if args[0] == "epp" { // a binary of its own: kvrouter-epp FLAGS
			bin, args = bins.EPP, args[1:]
		}
		p := e2e.StartEnv(t, c.args[0], bin, c.env, args...)
		select {
		case <-p.Done():
		case <-time.After(30 * time.Second):
			p.Kill()
			t.Fatalf("%v %v: still running after 30s", c.env, c.args)
		}
		if log := p.Log(4 << 10); p.ExitErr() == nil || !strings.Contains(log, c.want) || !strings.Contains(log, "out of range") {
			t.Errorf("%v %v: exit %v, output %q: want an error naming %s and its range", c.env, c.args, p.ExitErr(), log, c.want)
		}
	}
}

// TestSignalDuringStartup: SIGTERM stops serve whether it comes at once
// (before its handler is installed) or while it starts with its largest
// index (1024 writers) and a worker it cannot reach: it exits on its own,
// not by the SIGKILL Stop falls back to after 10 s.
func TestSignalDuringStartup(t *testing.T) {
	skipShort(t)
	for _, wait := range []bool{false, true} {
		port := e2e.FreePorts(t, 1)[0]
		p := e2e.Start(t, "serve", bins.Kvrouter, "serve", "--no-nats", "--addr", "127.0.0.1:"+strconv.Itoa(port),
			"--index-writers", "1024", "--worker", "http://127.0.0.1:1,id=1")
		if wait {
			until(t, 30*time.Second, "serve answering /healthz", func() bool {
				code, _, _ := call(t, "GET", "http://127.0.0.1:"+strconv.Itoa(port)+"/healthz", "", "")
				return code == 200 || p.Exited()
			})
		}
		start := time.Now()
		if err := p.Stop(); err != nil && strings.Contains(err.Error(), "killed") {
			t.Fatalf("serve ignored SIGTERM (after /healthz: %v; killed after %v): %s", wait, time.Since(start), p.ExitReport())
		}
	}
}
