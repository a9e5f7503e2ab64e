package epp_test

import (
	"context"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/kvrouter/kvrouter/internal/epp"
	"github.com/kvrouter/kvrouter/internal/frontend"
)

// pickWith plays a BUFFERED request phase with the given request headers
// and filter metadata and returns the exchange (pick or immediate).
func pickWith(t *testing.T, p *picker, h map[string]string, md map[string]any) *exchange {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := p.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	x := &exchange{stream: st, cancel: cancel}
	var meta *corev3.Metadata
	if md != nil {
		s, err := structpb.NewStruct(md)
		if err != nil {
			t.Fatal(err)
		}
		meta = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{epp.NamespacePlacement: s}}
	}
	mode := filterv3.ProcessingMode_BUFFERED
	for _, r := range []*extprocv3.ProcessingRequest{
		{ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: mode, ResponseBodyMode: mode}, MetadataContext: meta,
			Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: headerMap("/v1/completions", h)}}},
		{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: completion("pin me", false), EndOfStream: true}}},
	} {
		if err := st.Send(r); err != nil {
			t.Fatal(err)
		}
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if x.immediate = resp.GetImmediateResponse(); x.immediate != nil {
			return x
		}
		if cr := resp.GetRequestBody().GetResponse(); cr != nil {
			x.readPick(t, cr, resp)
		}
	}
	return x
}

// TestPlacementMetadataAndHeaders: the gateway's placement metadata
// (trusted) pins, bounds ranks and requires labels without a key; the
// same rules as client headers need the admin key (403); an unsatisfiable
// or malformed rule is an immediate 503 or 400, never another endpoint.
func TestPlacementMetadataAndHeaders(t *testing.T) {
	p := startPickerWith(t, 3, func(c *frontend.Config) {
		c.APIKeys, c.AdminKeys = []string{"client"}, []string{"admin"}
	})
	client := map[string]string{"authorization": "Bearer client"}
	admin := map[string]string{"authorization": "Bearer admin"}
	for i := range 3 {
		x := pickWith(t, p, client, map[string]any{epp.KeyPinWorker: "2"})
		if x.immediate != nil || p.worker(t, x.dest) != 2 {
			t.Fatalf("metadata pin #%d: %+v", i, x)
		}
		x = pickWith(t, p, admin, nil)
		if x.immediate != nil {
			t.Fatalf("no placement: %+v", x.immediate)
		}
		h := map[string]string{"authorization": "Bearer admin", frontend.HeaderPinWorker: "3"}
		if x = pickWith(t, p, h, nil); x.immediate != nil || p.worker(t, x.dest) != 3 {
			t.Fatalf("admin header pin #%d: %+v", i, x)
		}
	}
	for name, c := range map[string]struct {
		h    map[string]string
		md   map[string]any
		code int32
	}{
		"client header":    {map[string]string{"authorization": "Bearer client", frontend.HeaderPinWorker: "3"}, nil, 403},
		"unknown worker":   {client, map[string]any{epp.KeyPinWorker: "42"}, 503},
		"missing label":    {client, map[string]any{epp.KeyLabels: map[string]any{"zone": "nowhere"}}, 503},
		"ranks past fleet": {client, map[string]any{epp.KeyDPRanks: "3-4"}, 503},
		"malformed ranks":  {client, map[string]any{epp.KeyDPRanks: "four"}, 400},
	} {
		x := pickWith(t, p, c.h, c.md)
		if x.immediate == nil || int32(x.immediate.GetStatus().GetCode()) != c.code {
			t.Errorf("%s: want immediate %d, got %+v", name, c.code, x)
		}
	}
}
