package epp

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/tokenizer"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// fakeStream plays a proxy's messages, in order, to Process, and keeps
// its answers.
type fakeStream struct {
	grpc.ServerStream
	ctx  context.Context
	in   []*extprocv3.ProcessingRequest
	sent int
}

func (f *fakeStream) Context() context.Context { return f.ctx }

func (f *fakeStream) Recv() (*extprocv3.ProcessingRequest, error) {
	if len(f.in) == 0 {
		return nil, io.EOF
	}
	r := f.in[0]
	f.in = f.in[1:]
	return r, nil
}

func (f *fakeStream) Send(*extprocv3.ProcessingResponse) error { f.sent++; return nil }

// fuzzPicker is a picker over a frontend with two workers that are never
// dialled (a pick does not reach the worker), with small bounds.
func fuzzPicker(t testing.TB) *Server {
	t.Helper()
	tok, err := tokenizer.Default(tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fc := frontend.DefaultConfig()
	fc.Tokenizer, fc.Seed, fc.MaxBodyBytes = tok, 1, 4<<10
	fc.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	fc.LoadPollInterval = -1
	fe, err := frontend.New(fc)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 2; id++ {
		if err := fe.AddWorker(frontend.Worker{ID: id, URL: "http://127.0.0.1:" + string(rune('0'+id))}); err != nil {
			t.Fatal(err)
		}
	}
	pc := DefaultProtocolConfig()
	pc.Logger = fc.Logger
	s, err := New(pc, fe)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// encodeMessages is the fuzz input form of a message sequence: each one
// a 2-byte big-endian length and its protobuf encoding.
func encodeMessages(t testing.TB, msgs ...*extprocv3.ProcessingRequest) []byte {
	var out []byte
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = binary.BigEndian.AppendUint16(out, uint16(len(b)))
		out = append(out, b...)
	}
	return out
}

func decodeMessages(b []byte) []*extprocv3.ProcessingRequest {
	var out []*extprocv3.ProcessingRequest
	for len(b) >= 2 && len(out) < 64 {
		n := int(binary.BigEndian.Uint16(b))
		b = b[2:]
		if n > len(b) {
			n = len(b)
		}
		m := &extprocv3.ProcessingRequest{}
		if proto.Unmarshal(b[:n], m) == nil {
			out = append(out, m)
		}
		b = b[n:]
	}
	return out
}

func fuzzHeaders(path string, eos bool, mode filterv3.ProcessingMode_BodySendMode) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{
		ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: mode, ResponseBodyMode: mode},
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{EndOfStream: eos,
			Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":path", RawValue: []byte(path)},
				{Key: "x-session-id", Value: "s"}}}}}}
}

func fuzzBody(b string, eos bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
		RequestBody: &extprocv3.HttpBody{Body: []byte(b), EndOfStream: eos}}}
}

func fuzzResponse(ct, b string, eos bool) []*extprocv3.ProcessingRequest {
	return []*extprocv3.ProcessingRequest{
		{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":status", RawValue: []byte("200")},
				{Key: "content-type", RawValue: []byte(ct)}}}}}},
		{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(b), EndOfStream: eos}}},
	}
}

// FuzzProcess: any sequence of proxy messages (request headers, bodies,
// trailers, the response's headers and body, in any order and mode) is
// served without a panic, and when the stream ends the picker holds no
// body, no answer buffer and no load.
func FuzzProcess(f *testing.F) {
	const req = `{"model":"m","prompt":"hello there","max_tokens":2,"stream":true}`
	for _, mode := range []filterv3.ProcessingMode_BodySendMode{filterv3.ProcessingMode_FULL_DUPLEX_STREAMED,
		filterv3.ProcessingMode_BUFFERED, filterv3.ProcessingMode_STREAMED, filterv3.ProcessingMode_NONE} {
		msgs := append([]*extprocv3.ProcessingRequest{fuzzHeaders("/v1/completions", false, mode),
			fuzzBody(req[:10], false), fuzzBody(req[10:], true)},
			fuzzResponse("text/event-stream", "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n", true)...)
		f.Add(encodeMessages(f, msgs...))
	}
	f.Add(encodeMessages(f, fuzzHeaders("/v1/chat/completions", false, filterv3.ProcessingMode_FULL_DUPLEX_STREAMED),
		fuzzBody(`{"model":"m","messages":[{"role":"user","content":"hi"}],"kv_transfer_params":{"do_remote_decode":true}}`, true)))
	f.Add(encodeMessages(f, fuzzHeaders("/v1/models", true, filterv3.ProcessingMode_BUFFERED)))
	f.Add(encodeMessages(f, append([]*extprocv3.ProcessingRequest{fuzzHeaders("/v1/completions", false, 0),
		fuzzBody(req, false), {Request: &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: &extprocv3.HttpTrailers{}}}},
		fuzzResponse("application/json", `{"usage":{"completion_tokens":2}}`, false)...)...))
	s := fuzzPicker(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		st := &fakeStream{ctx: context.Background(), in: decodeMessages(in)}
		_ = s.Process(st)
		if n, b := s.m.bodies.Size(); n != 0 || b != 0 {
			t.Fatalf("after the stream: %d bodies, %d bytes held", n, b)
		}
		if n, b := s.m.answers.Size(); n != 0 || b != 0 {
			t.Fatalf("after the stream: %d answer buffers, %d bytes held", n, b)
		}
		rt := s.fe.Router()
		for _, w := range rt.Workers() {
			if rt.Load(kvevents.Worker{ID: w.ID}).Requests != 0 {
				t.Fatalf("after the stream: worker %d still loaded", w.ID)
			}
		}
	})
}

// FuzzClientKVTransfer: the kv_transfer_params check agrees with a full
// decode of the body's top level, however the key is spelled.
func FuzzClientKVTransfer(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hi","kv_transfer_params":{"do_remote_prefill":true}}`,
		`{"kv\u005ftransfer_params":{}}`,
		`{"kv_transfer_params":null}`,
		`{"a":{"kv_transfer_params":1}}`,
		`{"kv_transfer_params":1,"kv_transfer_params":null}`,
		`["kv_transfer_params"]`,
		`{"prompt":"caf\u00e9"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := clientKVTransfer(body)
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			return // not an object: refused on the key's mention alone
		}
		v, ok := top[kvTransferKey]
		if want := ok && string(v) != "null"; got != want {
			t.Fatalf("clientKVTransfer(%q) = %v, want %v", body, got, want)
		}
	})
}
