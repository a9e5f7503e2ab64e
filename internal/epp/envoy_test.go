package epp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/kvrouter/kvrouter/internal/epp"
	"google.golang.org/protobuf/types/known/structpb"
)

// envoy plays Envoy's side of the ext_proc stream for one HTTP request,
// in the message order Envoy uses for a body mode (protocol_config on
// the first message, as Envoy 1.33+ sends it).
type envoy struct {
	t      *testing.T
	client extprocv3.ExternalProcessorClient
	mode   filterv3.ProcessingMode_BodySendMode
	chunk  int // request body chunk size (streamed modes)
	// forward sends the picked request to the endpoint, as the proxy's
	// upstream would (nil: the test plays the response itself).
	http *http.Client
}

// exchange is one request's stream as the proxy saw it.
type exchange struct {
	stream    extprocv3.ExternalProcessor_ProcessClient
	cancel    context.CancelFunc
	dest      string // x-gateway-destination-endpoint header
	mdDest    string // envoy.lb metadata
	body      []byte // the body as it goes upstream
	immediate *extprocv3.ImmediateResponse
}

func (e *envoy) subsetMetadata(subset []string) *corev3.Metadata {
	if subset == nil {
		return nil
	}
	vals := make([]any, len(subset))
	for i, s := range subset {
		vals[i] = s
	}
	st, err := structpb.NewStruct(map[string]any{epp.KeySubset: vals})
	if err != nil {
		e.t.Fatal(err)
	}
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{epp.DefaultSubsetNamespace: st}}
}

func headerMap(path string, h map[string]string) *corev3.HeaderMap {
	hm := &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: ":method", RawValue: []byte("POST")}, {Key: ":path", RawValue: []byte(path)},
		{Key: ":authority", RawValue: []byte("gateway")}, {Key: "content-type", RawValue: []byte("application/json")},
	}}
	for k, v := range h {
		hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: k, RawValue: []byte(v)})
	}
	return hm
}

// request plays the request phase and returns what the proxy would do:
// the pick (header, metadata, body to forward) or an immediate response.
func (e *envoy) request(path string, h map[string]string, body []byte, subset []string) *exchange {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := e.client.Process(ctx)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	x := &exchange{stream: st, cancel: cancel}
	e.t.Cleanup(cancel)
	send := func(r *extprocv3.ProcessingRequest) {
		e.t.Helper()
		if err := st.Send(r); err != nil {
			e.t.Fatal(err)
		}
	}
	recv := func() *extprocv3.ProcessingResponse {
		e.t.Helper()
		r, err := st.Recv()
		if err != nil {
			e.t.Fatalf("recv: %v", err)
		}
		if im := r.GetImmediateResponse(); im != nil {
			x.immediate = im
		}
		return r
	}
	send(&extprocv3.ProcessingRequest{
		ProtocolConfig:  &extprocv3.ProtocolConfiguration{RequestBodyMode: e.mode, ResponseBodyMode: e.mode},
		MetadataContext: e.subsetMetadata(subset),
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: headerMap(path, h), EndOfStream: len(body) == 0}},
	})
	chunks := [][]byte{body}
	if e.chunk > 0 {
		chunks = nil
		for b := body; len(b) > 0; {
			n := min(e.chunk, len(b))
			chunks, b = append(chunks, b[:n]), b[n:]
		}
	}
	switch e.mode {
	case filterv3.ProcessingMode_FULL_DUPLEX_STREAMED:
		// Every chunk goes out before any answer (full duplex): the
		// headers' answer, carrying the pick, comes after the last one.
		for i, c := range chunks {
			send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
				RequestBody: &extprocv3.HttpBody{Body: c, EndOfStream: i == len(chunks)-1}}})
		}
		r := recv()
		if x.immediate != nil {
			return x
		}
		x.readPick(e.t, r.GetRequestHeaders().GetResponse(), r)
		if len(body) == 0 {
			return x // no body to echo
		}
		for {
			r := recv()
			sb := r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse()
			if sb == nil {
				e.t.Fatalf("want a streamed body response, got %v", r)
			}
			x.body = append(x.body, sb.GetBody()...)
			if sb.GetEndOfStream() {
				return x
			}
		}
	default: // BUFFERED: the headers are answered at once, the pick rides on the body's answer
		r := recv()
		if x.immediate != nil {
			return x
		}
		if r.GetRequestHeaders() == nil {
			e.t.Fatalf("want a headers response, got %v", r)
		}
		if len(body) == 0 {
			x.readPick(e.t, r.GetRequestHeaders().GetResponse(), r)
			return x
		}
		send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
			RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}})
		r = recv()
		if x.immediate != nil {
			return x
		}
		cr := r.GetRequestBody().GetResponse()
		x.readPick(e.t, cr, r)
		x.body = body
		if b := cr.GetBodyMutation().GetBody(); b != nil {
			x.body = b
		}
		return x
	}
}

func (x *exchange) readPick(t *testing.T, cr *extprocv3.CommonResponse, r *extprocv3.ProcessingResponse) {
	t.Helper()
	for _, h := range cr.GetHeaderMutation().GetSetHeaders() {
		if h.GetHeader().GetKey() == epp.HeaderDestination {
			x.dest = string(h.GetHeader().GetRawValue())
		}
	}
	ns := r.GetDynamicMetadata().GetFields()[epp.DefaultDestinationNamespace].GetStructValue()
	x.mdDest = ns.GetFields()[epp.HeaderDestination].GetStringValue()
	if x.dest == "" || x.dest != x.mdDest {
		t.Fatalf("pick: header %q, metadata %q (want equal, non-empty)", x.dest, x.mdDest)
	}
}

// respond plays the response phase from a real upstream response: the
// status and headers, then the body as it arrives, chunk by chunk, and
// closes the stream; it returns the body the client would see.
func (e *envoy) respond(x *exchange, resp *http.Response) []byte {
	e.t.Helper()
	defer resp.Body.Close()
	hm := &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: ":status", RawValue: []byte(strconv.Itoa(resp.StatusCode))},
		{Key: "content-type", RawValue: []byte(resp.Header.Get("Content-Type"))},
	}}
	e.step(x, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{Headers: hm}}})
	var out []byte
	buf := make([]byte, 512)
	for {
		n, err := resp.Body.Read(buf)
		eof := errors.Is(err, io.EOF)
		if err != nil && !eof {
			e.t.Fatal(err)
		}
		if n == 0 && !eof {
			continue
		}
		r := e.step(x, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
			ResponseBody: &extprocv3.HttpBody{Body: bytes.Clone(buf[:n]), EndOfStream: eof}}})
		sb := r.GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse()
		if e.mode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
			out = append(out, sb.GetBody()...) // the picker echoes each chunk
		} else {
			out = append(out, buf[:n]...)
		}
		if eof {
			break
		}
	}
	x.close(e.t)
	return out
}

// step sends one message and reads its answer.
func (e *envoy) step(x *exchange, req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
	e.t.Helper()
	if err := x.stream.Send(req); err != nil {
		e.t.Fatal(err)
	}
	r, err := x.stream.Recv()
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// close half-closes the stream and waits for the picker to end it.
func (x *exchange) close(t *testing.T) {
	t.Helper()
	if err := x.stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := x.stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("stream end: %v", err)
	}
}

// forward sends the picked request upstream, as the proxy would.
func (e *envoy) forward(x *exchange, path string) *http.Response {
	e.t.Helper()
	resp, err := e.http.Post("http://"+x.dest+path, "application/json", bytes.NewReader(x.body))
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
