package epp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/epp"
	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// picker is `kvrouter-epp` over a fleet of mocker workers on loopback
// (internal/fleet: the same runtimes as kvrouter mocker; KV events go
// straight into the router's index).
type picker struct {
	f      *fleet.Fleet
	conn   *grpc.ClientConn
	client extprocv3.ExternalProcessorClient
}

func startPicker(t *testing.T, workers int) *picker { return startPickerWith(t, workers, nil) }

// startPickerWith starts a picker with mod applied to the frontend's
// config and emod (if any) to the picker's.
func startPickerWith(t *testing.T, workers int, mod func(*frontend.Config), emod ...func(*epp.Config)) *picker {
	t.Helper()
	eng := mocker.DefaultConfig()
	eng.NumBlocks, eng.BlockSize, eng.SpeedupRatio = 4096, 16, 100
	fc := frontend.DefaultConfig()
	fc.Seed = 1
	fc.LoadPollInterval = -1
	fc.DrainTimeout = 5 * time.Second
	if mod != nil {
		mod(&fc)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ec := epp.DefaultConfig()
	ec.GRPCListener = gln
	ec.HealthInterval = 5 * time.Millisecond
	ec.Serve.Logger = log
	for _, m := range emod {
		m(&ec)
	}
	f, err := fleet.New(fleet.Config{Workers: workers, Engine: eng, Frontend: fc, Direct: true, Logger: log,
		RunRouter: func(ctx context.Context, s *app.Serve) error { return epp.RunWith(ctx, s, ec, nil) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fleet run: %v", err)
		}
	})
	select {
	case <-f.Ready():
	case err := <-done:
		t.Fatalf("fleet: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("fleet not ready")
	}
	conn, err := grpc.NewClient(gln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &picker{f: f, conn: conn, client: extprocv3.NewExternalProcessorClient(conn)}
}

func (p *picker) envoy(t *testing.T, mode filterv3.ProcessingMode_BodySendMode, chunk int) *envoy {
	return &envoy{t: t, client: p.client, mode: mode, chunk: chunk, http: &http.Client{}}
}

// endpoint of worker id.
func (p *picker) endpoint(t *testing.T, id uint64) string {
	for _, w := range p.f.Frontend().Workers() {
		if w.ID == id {
			return frontend.HostPort(w.URL)
		}
	}
	t.Fatalf("no worker %d", id)
	return ""
}

func (p *picker) worker(t *testing.T, dest string) uint64 {
	t.Helper()
	ids := p.f.Frontend().WorkersAt([]string{dest})
	if len(ids) != 1 {
		t.Fatalf("endpoint %q is no worker", dest)
	}
	return ids[0]
}

// idle reports whether the router holds no load on any worker.
func (p *picker) idle() bool {
	rt := p.f.Frontend().Router()
	for _, w := range rt.Workers() {
		if l := rt.Load(kvevents.Worker{ID: w.ID}); l.Requests != 0 {
			return false
		}
	}
	return true
}

func completion(prompt string, stream bool) []byte {
	b, _ := json.Marshal(map[string]any{"model": app.DefaultModel, "prompt": prompt, "max_tokens": 4, "stream": stream})
	return b
}

func prompt(topic string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s paragraph %d talks about %s at some length. ", topic, i, topic)
	}
	return b.String()
}

var modes = []struct {
	name  string
	mode  filterv3.ProcessingMode_BodySendMode
	chunk int
}{
	{"full-duplex", filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, 100},
	{"buffered", filterv3.ProcessingMode_BUFFERED, 0},
}

// TestEnvoyPicks plays Envoy's message sequence in both body modes: a
// prompt goes to some worker; after its KV events, the same prefix with
// another suffix goes to the same worker (prefix affinity); the subset
// hint overrides it; a subset of unknown endpoints is a 503.
func TestEnvoyPicks(t *testing.T) {
	p := startPicker(t, 4)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			e := p.envoy(t, m.mode, m.chunk)
			base := prompt("shared-prefix-"+m.name, 20)
			rt := p.f.Frontend().Router()
			before := rt.Index(kvevents.TierDevice).Stats().Blocks
			first := e.request("/v1/completions", nil, completion(base+" first question?", true), nil)
			if first.immediate != nil {
				t.Fatalf("immediate response %v", first.immediate)
			}
			w := p.worker(t, first.dest)
			out := e.respond(first, e.forward(first, "/v1/completions"))
			if !bytes.Contains(out, []byte("data: [DONE]")) {
				t.Fatalf("streamed answer not relayed: %q", out)
			}
			waitFor(t, "the request's load freed", p.idle)
			waitFor(t, "the worker's KV events", func() bool {
				_ = p.f.Frontend().Flush(context.Background())
				return rt.Index(kvevents.TierDevice).Stats().Blocks > before
			})
			for i := range 3 {
				x := e.request("/v1/completions", nil, completion(base+fmt.Sprintf(" follow-up %d?", i), true), nil)
				if got := p.worker(t, x.dest); got != w {
					t.Fatalf("follow-up %d went to worker %d, want %d (prefix affinity)", i, got, w)
				}
				e.respond(x, e.forward(x, "/v1/completions"))
			}
			other := w%4 + 1
			x := e.request("/v1/completions", nil, completion(base+" pinned?", false), []string{p.endpoint(t, other)})
			if got := p.worker(t, x.dest); got != other {
				t.Fatalf("subset hint: picked worker %d, want %d", got, other)
			}
			e.respond(x, e.forward(x, "/v1/completions"))
			for _, subset := range [][]string{{"10.255.255.1:8000"}, {}} {
				x = e.request("/v1/completions", nil, completion(base, false), subset)
				if x.immediate == nil || x.immediate.GetStatus().GetCode() != 503 {
					t.Fatalf("subset %v: want ImmediateResponse 503, got %+v", subset, x)
				}
			}
			x = e.request("/v1/completions", nil, []byte(`{"model":"m","prompt":`), nil)
			if x.immediate == nil || x.immediate.GetStatus().GetCode() != 400 {
				t.Fatalf("bad body: want ImmediateResponse 400, got %+v", x)
			}
			waitFor(t, "every load freed", p.idle)
		})
	}
}

// TestEnvoyLifecycle holds requests open at each response phase: their
// picks spread over the workers while they hold load, the first response
// chunk ends prefill, the end of the body (or a reset) frees the load.
func TestEnvoyLifecycle(t *testing.T) {
	p := startPicker(t, 4)
	e := p.envoy(t, filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, 64)
	rt := p.f.Frontend().Router()
	var xs []*exchange
	used := map[uint64]bool{}
	for i := range 4 {
		x := e.request("/v1/chat/completions", map[string]string{frontend.HeaderPriority: "1"},
			[]byte(fmt.Sprintf(`{"model":"m","stream":true,"messages":[{"role":"user","content":%q}]}`, prompt(fmt.Sprint("topic", i), 10))), nil)
		used[p.worker(t, x.dest)] = true
		xs = append(xs, x)
	}
	if len(used) != 4 {
		t.Fatalf("4 concurrent distinct prompts used workers %v, want all 4 (load spreading)", used)
	}
	w0 := p.worker(t, xs[0].dest)
	if l := rt.Load(kvevents.Worker{ID: w0}); l.PrefillRequests != 1 {
		t.Fatalf("before the response: load %v, want one request in prefill", l)
	}
	// Response headers, then a first chunk: prefill done.
	e.step(xs[0], respHeaders(200, "text/event-stream"))
	e.step(xs[0], respBody("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n", false))
	if l := rt.Load(kvevents.Worker{ID: w0}); l.PrefillRequests != 0 || l.Requests != 1 {
		t.Fatalf("after the first token: load %v, want one request in decode", l)
	}
	e.step(xs[0], respBody("data: [DONE]\n\n", true))
	if l := rt.Load(kvevents.Worker{ID: w0}); l.Requests != 0 {
		t.Fatalf("after the end of the body: load %v, want free", l)
	}
	xs[0].close(t)
	// A reset mid-stream (client gone) frees too.
	e.step(xs[1], respHeaders(200, "text/event-stream"))
	xs[1].cancel()
	// Non-200 answers and trailers end the request as well.
	e.step(xs[2], respHeaders(500, "application/json"))
	e.step(xs[2], respBody(`{"error":"boom"}`, true))
	xs[2].close(t)
	xs[3].cancel() // reset before any response
	waitFor(t, "every load freed after end, reset and errors", p.idle)
}

func respHeaders(status int, ct string) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{Headers: headerMap("", map[string]string{":status": fmt.Sprint(status), "content-type": ct})}}}
}

func respBody(s string, eos bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
		ResponseBody: &extprocv3.HttpBody{Body: []byte(s), EndOfStream: eos}}}
}

// TestHealth: the gRPC health service answers for the protocol's
// services once the picker has workers.
func TestHealth(t *testing.T) {
	p := startPicker(t, 1)
	hc := healthpb.NewHealthClient(p.conn)
	for _, svc := range []string{"", epp.HealthLiveness, epp.HealthReadiness, extprocv3.ExternalProcessor_ServiceDesc.ServiceName} {
		waitFor(t, "serving "+svc, func() bool {
			r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
			return err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING
		})
	}
}

// TestNoBody: a request without a body (GET /v1/models) is picked by
// load at the headers, in either mode.
func TestNoBody(t *testing.T) {
	p := startPicker(t, 2)
	for _, m := range modes {
		e := p.envoy(t, m.mode, m.chunk)
		x := e.request("/v1/models", nil, nil, nil)
		if x.immediate != nil || x.dest == "" {
			t.Fatalf("%s: no pick for a body-less request: %+v", m.name, x)
		}
		e.step(x, respHeaders(200, "application/json"))
		e.step(x, respBody(`{"data":[]}`, true))
		x.close(t)
	}
	waitFor(t, "loads freed", p.idle)
}

// TestSessionAffinity: with --session-affinity, requests carrying one
// X-Session-Id go to the worker of the session's first request, even
// while that worker holds the most load (as in serve).
func TestSessionAffinity(t *testing.T) {
	p := startPickerWith(t, 4, func(fc *frontend.Config) { fc.Router.Affinity.Enabled = true })
	e := p.envoy(t, filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, 128)
	h := map[string]string{frontend.HeaderSession: "conversation-7"}
	first := e.request("/v1/completions", h, completion(prompt("opening", 8), true), nil)
	w := p.worker(t, first.dest)
	for i := range 3 { // held open: their load sits on w
		x := e.request("/v1/completions", h, completion(prompt(fmt.Sprint("turn", i), 8), true), nil)
		if got := p.worker(t, x.dest); got != w {
			t.Fatalf("turn %d of the session went to worker %d, want %d", i, got, w)
		}
	}
	// Without the header, the next distinct prompt avoids the loaded worker.
	x := e.request("/v1/completions", nil, completion(prompt("stranger", 8), true), nil)
	if p.worker(t, x.dest) == w {
		t.Fatalf("a session-less request went to the session's loaded worker %d", w)
	}
}
