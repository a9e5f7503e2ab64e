package epp_test

import (
	"fmt"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/kvrouter/kvrouter/internal/epp"
	"github.com/kvrouter/kvrouter/kvevents"
	"google.golang.org/protobuf/types/known/structpb"
)

// servedHeaders is a response-headers message carrying the endpoint the
// proxy reports as served (envoy.lb / x-gateway-destination-endpoint-served).
func servedHeaders(t *testing.T, served string) *extprocv3.ProcessingRequest {
	t.Helper()
	st, err := structpb.NewStruct(map[string]any{epp.KeyDestinationServed: served})
	if err != nil {
		t.Fatal(err)
	}
	r := respHeaders(200, "text/event-stream")
	r.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{epp.DefaultDestinationNamespace: st}}
	return r
}

// TestFallbacks: with --fallbacks 2 the destination lists the pick and
// two other workers (header and metadata alike). When the proxy reports a
// fallback as served, the request's load moves there and is freed there
// at the end; an endpoint outside the list leaves the load on the pick.
func TestFallbacks(t *testing.T) {
	p := startPickerWith(t, 4, nil, func(c *epp.Config) { c.Protocol.Fallbacks = 2 })
	e := p.envoy(t, filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, 64)
	rt := p.f.Frontend().Router()
	load := func(dest string) int { return rt.Load(kvevents.Worker{ID: p.worker(t, dest)}).Requests }
	body := func(i int) []byte {
		return []byte(fmt.Sprintf(`{"model":"m","stream":true,"messages":[{"role":"user","content":%q}]}`, prompt(fmt.Sprint("fallback", i), 10)))
	}

	x := e.request("/v1/chat/completions", nil, body(0), nil)
	list := strings.Split(x.dest, ",")
	if len(list) != 3 {
		t.Fatalf("destination %q: want the pick and 2 fallbacks", x.dest)
	}
	seen := map[uint64]bool{}
	for _, d := range list {
		seen[p.worker(t, d)] = true
	}
	if len(seen) != 3 {
		t.Fatalf("destination %q names %d distinct workers, want 3", x.dest, len(seen))
	}
	pick, fb := list[0], list[2]
	if load(pick) != 1 || load(fb) != 0 {
		t.Fatalf("after the pick: loads pick %d, fallback %d; want 1, 0", load(pick), load(fb))
	}
	e.step(x, servedHeaders(t, fb))
	if load(pick) != 0 || load(fb) != 1 {
		t.Fatalf("served by the second fallback: loads pick %d, fallback %d; want 0, 1", load(pick), load(fb))
	}
	if l := rt.Load(kvevents.Worker{ID: p.worker(t, fb)}); l.PrefillRequests != 1 {
		t.Fatalf("fallback's load %+v: want the request in prefill", l)
	}
	e.step(x, respBody("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n", false))
	e.step(x, respBody("data: [DONE]\n\n", true))
	x.close(t)
	waitFor(t, "the fallback's load freed at the end of the body", p.idle)

	// An endpoint the pick did not list: counted, the load stays on the pick.
	y := e.request("/v1/chat/completions", nil, body(1), nil)
	ylist := strings.Split(y.dest, ",")
	var other string
	for _, w := range p.f.Frontend().Workers() {
		if ep := p.endpoint(t, w.ID); !strings.Contains(","+y.dest+",", ","+ep+",") {
			other = ep
		}
	}
	if other == "" {
		t.Fatalf("destination %q lists every worker of 4", y.dest)
	}
	e.step(y, servedHeaders(t, other))
	if load(ylist[0]) != 1 || load(other) != 0 {
		t.Fatalf("served by an unlisted endpoint: loads pick %d, other %d; want 1, 0", load(ylist[0]), load(other))
	}
	e.step(y, respBody("data: [DONE]\n\n", true))
	y.close(t)
	waitFor(t, "every load freed", p.idle)
}
