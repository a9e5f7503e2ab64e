package epp_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/kvrouter/kvrouter/internal/epp"
	"github.com/kvrouter/kvrouter/kvevents"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// The Endpoint Picker Protocol's wire names, spelled out as the protocol
// (gateway-api-inference-extension, docs/proposals/004-endpoint-picker-
// protocol, v1.0.0) writes them. This file reads and writes them only
// through these literals, never through the package's constants, so a
// renamed constant fails here even when every other test follows it.
const (
	wireDestHeader    = "x-gateway-destination-endpoint"
	wireDestNamespace = "envoy.lb"
	wireSubsetNS      = "envoy.lb.subset_hint"
	wireSubsetKey     = "x-gateway-destination-endpoint-subset"
	wireServedKey     = "x-gateway-destination-endpoint-served"
	wireLiveness      = "liveness"
	wireReadiness     = "readiness"
	wireExtProc       = "envoy.service.ext_proc.v3.ExternalProcessor"
)

// TestWireNames plays one buffered request with the subset hint written
// under its literal names, reads the pick from the literal header and
// metadata names, reports a fallback as served under its literal key and
// checks the load moved there; the health services answer by their
// literal names.
func TestWireNames(t *testing.T) {
	p := startPickerWith(t, 3, nil, func(c *epp.Config) { c.Protocol.Fallbacks = 1 })
	hc := healthpb.NewHealthClient(p.conn)
	for _, svc := range []string{wireLiveness, wireReadiness, wireExtProc} {
		waitFor(t, "health service "+svc, func() bool {
			r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
			return err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING
		})
	}

	subset := []string{p.endpoint(t, 2), p.endpoint(t, 3)}
	hint, err := structpb.NewStruct(map[string]any{wireSubsetKey: []any{subset[0], subset[1]}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := p.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	x := &exchange{stream: st, cancel: cancel}
	e := p.envoy(t, filterv3.ProcessingMode_BUFFERED, 0)
	r := e.step(x, &extprocv3.ProcessingRequest{
		ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: filterv3.ProcessingMode_BUFFERED,
			ResponseBodyMode: filterv3.ProcessingMode_BUFFERED},
		MetadataContext: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{wireSubsetNS: hint}},
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: headerMap("/v1/completions", nil)}},
	})
	if r.GetRequestHeaders() == nil {
		t.Fatalf("want a headers response, got %v", r)
	}
	r = e.step(x, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
		RequestBody: &extprocv3.HttpBody{Body: completion(prompt("wire names", 8), true), EndOfStream: true}}})
	if im := r.GetImmediateResponse(); im != nil {
		t.Fatalf("immediate response %v", im)
	}
	var header string
	for _, h := range r.GetRequestBody().GetResponse().GetHeaderMutation().GetSetHeaders() {
		if h.GetHeader().GetKey() == wireDestHeader {
			header = string(h.GetHeader().GetRawValue())
		}
	}
	md := r.GetDynamicMetadata().GetFields()[wireDestNamespace].GetStructValue().GetFields()[wireDestHeader].GetStringValue()
	if header == "" || header != md {
		t.Fatalf("pick: header %s=%q, metadata %s/%s=%q; want equal and non-empty (response %v)",
			wireDestHeader, header, wireDestNamespace, wireDestHeader, md, r)
	}
	list := strings.Split(header, ",")
	if len(list) != 2 || !slices.Contains(subset, list[0]) || !slices.Contains(subset, list[1]) || list[0] == list[1] {
		t.Fatalf("destination %q: want the 2 endpoints of the %s/%s hint %v", header, wireSubsetNS, wireSubsetKey, subset)
	}

	rt := p.f.Frontend().Router()
	load := func(ep string) int { return rt.Load(kvevents.Worker{ID: p.worker(t, ep)}).Requests }
	if load(list[0]) != 1 || load(list[1]) != 0 {
		t.Fatalf("after the pick: loads %d, %d; want 1, 0", load(list[0]), load(list[1]))
	}
	served, err := structpb.NewStruct(map[string]any{wireServedKey: list[1]})
	if err != nil {
		t.Fatal(err)
	}
	rh := respHeaders(200, "text/event-stream")
	rh.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{wireDestNamespace: served}}
	e.step(x, rh)
	if load(list[0]) != 0 || load(list[1]) != 1 {
		t.Fatalf("served by the fallback (%s/%s): loads %d, %d; want 0, 1", wireDestNamespace, wireServedKey, load(list[0]), load(list[1]))
	}
	e.step(x, respBody("data: [DONE]\n\n", true))
	x.close(t)
	waitFor(t, "loads freed", p.idle)
}
