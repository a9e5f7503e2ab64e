package epp

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/internal/oai"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// Names of the Endpoint Picker Protocol (gateway-api-inference-extension
// docs/proposals/004-endpoint-picker-protocol, version 1.0.0).
const (
	// HeaderDestination carries the picked endpoint "ip:port" to the
	// proxy; the same value goes into the dynamic metadata.
	HeaderDestination = "x-gateway-destination-endpoint"
	// KeyDestinationServed is the response-path metadata key under which
	// the proxy reports the endpoint that served the request.
	KeyDestinationServed = "x-gateway-destination-endpoint-served"
	// KeySubset is the request-path metadata key listing the endpoints
	// the pick must come from.
	KeySubset = "x-gateway-destination-endpoint-subset"
	// DefaultDestinationNamespace is the metadata namespace of the pick
	// (and of the served endpoint).
	DefaultDestinationNamespace = "envoy.lb"
	// DefaultSubsetNamespace is the metadata namespace of the subset hint.
	DefaultSubsetNamespace = "envoy.lb.subset_hint"
)

// maxChunk bounds one streamed body response (Envoy's recommendation for
// FULL_DUPLEX_STREAMED: no more than 64 KiB per chunk).
const maxChunk = 64 << 10

// MaxHeaderBytes bounds a request's headers (names and values) the picker
// reads; beyond, an ImmediateResponse 431. Envoy's own limit is lower by
// default (60 KiB), so only a proxy configured far beyond it reaches this.
const MaxHeaderBytes = 1 << 20

// Server implements envoy.service.ext_proc.v3.ExternalProcessor as an
// endpoint picker over a frontend (its router core, workers, metrics).
// Safe for concurrent use: one goroutine per gRPC stream.
type Server struct {
	extprocv3.UnimplementedExternalProcessorServer
	cfg ProtocolConfig
	fe  *frontend.Server
	log *slog.Logger
	m   *metrics

	// bodiesMu makes the check and the add of a new request body in
	// m.bodies one step, so that MaxBodies holds under concurrency.
	bodiesMu sync.Mutex
}

var _ extprocv3.ExternalProcessorServer = (*Server)(nil)

// New returns a picker over fe. It starts nothing.
func New(cfg ProtocolConfig, fe *frontend.Server) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	return &Server{cfg: cfg, fe: fe, log: cfg.Logger, m: newMetrics(fe.Registry(), fe.MaxBodies())}, nil
}

// exchange is one HTTP request's ext_proc stream.
type exchange struct {
	s       *Server
	stream  extprocv3.ExternalProcessor_ProcessServer
	reqMode filterv3.ProcessingMode_BodySendMode
	resMode filterv3.ProcessingMode_BodySendMode
	observe bool // observability mode: send nothing

	path      string
	header    http.Header
	subset    []string
	hasSubset bool
	place     *frontend.Placement // placement.go
	placeErr  *oai.Error
	body      []byte
	bodyHeld  bool // body is counted in the server's m.bodies
	resHeld   int  // picked.Buffered() as counted in m.answers
	unparsed  bool // picked.Unparsed() counted
	start     time.Time
	picked    *frontend.Picked
	sawBody   bool // a request body message arrived
	answered  bool // the request headers were answered (CONTINUE or the pick)
	responded bool // an immediate response ended the exchange
}

// Process serves one HTTP request's ext_proc stream: request headers and
// body (BUFFERED, STREAMED or FULL_DUPLEX_STREAMED), then the response
// headers and body, whose progress drives the load tracker (prefill done
// at the first chunk, free at the end, on a broken stream or a reset).
func (s *Server) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	x := &exchange{s: s, stream: stream, reqMode: s.cfg.RequestBodyMode, resMode: s.cfg.ResponseBodyMode}
	s.m.streams.Inc()
	defer func() {
		if x.picked != nil {
			x.picked.Done(frontend.OutcomeClientGone) // no-op after a complete response
			x.trackResponse()
		}
		x.releaseBody()
	}()
	for first := true; ; first = false {
		req, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled || stream.Context().Err() != nil {
				return nil
			}
			return err
		}
		if first && req.GetProtocolConfig() != nil {
			pc := req.GetProtocolConfig()
			x.reqMode, x.resMode = pc.GetRequestBodyMode(), pc.GetResponseBodyMode()
		}
		x.observe = req.GetObservabilityMode()
		if err := x.handle(req); err != nil {
			return err
		}
	}
}

func (x *exchange) handle(req *extprocv3.ProcessingRequest) error {
	switch r := req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return x.requestHeaders(req, r.RequestHeaders)
	case *extprocv3.ProcessingRequest_RequestBody:
		return x.requestBody(r.RequestBody)
	case *extprocv3.ProcessingRequest_RequestTrailers:
		if !x.answered && !x.responded {
			if err := x.pickAndAnswer(false); err != nil {
				return err
			}
		}
		return x.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{
			RequestTrailers: &extprocv3.TrailersResponse{}}})
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		if x.picked != nil {
			st, _ := strconv.Atoi(headerValue(r.ResponseHeaders.GetHeaders(), ":status"))
			x.picked.ResponseHeaders(st, headerValue(r.ResponseHeaders.GetHeaders(), "content-type"))
			x.checkServed(req)
			if r.ResponseHeaders.GetEndOfStream() {
				x.picked.Done("")
			}
		}
		return x.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{
			ResponseHeaders: &extprocv3.HeadersResponse{}}})
	case *extprocv3.ProcessingRequest_ResponseBody:
		b := r.ResponseBody
		if x.picked != nil {
			x.picked.ResponseBody(b.GetBody(), time.Now())
			if b.GetEndOfStream() {
				x.picked.Done("")
			}
			x.trackResponse()
		}
		if x.resMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
			return x.send(streamedBody(false, b.GetBody(), b.GetEndOfStream()))
		}
		return x.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{
			ResponseBody: &extprocv3.BodyResponse{}}})
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		if x.picked != nil {
			x.picked.Done("")
		}
		return x.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{
			ResponseTrailers: &extprocv3.TrailersResponse{}}})
	}
	return nil
}

func (x *exchange) requestHeaders(req *extprocv3.ProcessingRequest, h *extprocv3.HttpHeaders) error {
	if x.responded || x.picked != nil {
		return nil // one request per stream: a repeat is not answered
	}
	x.start = time.Now()
	size := 0
	for _, hv := range h.GetHeaders().GetHeaders() {
		size += len(hv.GetKey()) + len(hv.GetValue()) + len(hv.GetRawValue())
	}
	if size > MaxHeaderBytes {
		return x.refuse(&oai.Error{Status: http.StatusRequestHeaderFieldsTooLarge, Type: oai.TypeInvalidRequest,
			Code: "headers_too_large", Message: fmt.Sprintf("request headers exceed the limit of %d bytes", MaxHeaderBytes)})
	}
	x.header = make(http.Header, len(h.GetHeaders().GetHeaders()))
	for _, hv := range h.GetHeaders().GetHeaders() {
		k, v := hv.GetKey(), headerString(hv)
		if k == ":path" {
			x.path, _, _ = strings.Cut(v, "?")
		}
		if !strings.HasPrefix(k, ":") {
			x.header.Add(k, v)
		}
	}
	x.subset, x.hasSubset = subsetHint(req.GetMetadataContext(), x.s.cfg.SubsetNamespace)
	x.place, x.placeErr = placementOf(req.GetMetadataContext())
	switch {
	case h.GetEndOfStream():
		// No body (GET /v1/models, ...): picked now, by load alone.
		return x.pickAndAnswer(true)
	case x.reqMode == filterv3.ProcessingMode_NONE:
		// Envoy sends no body: the pick cannot see the prompt.
		x.path = ""
		return x.pickAndAnswer(true)
	case x.reqMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED:
		// NB: Envoy picks the upstream when the headers are answered, so
		// the answer waits for the body (the mode lets chunks flow first).
		return nil
	}
	x.answered = true
	return x.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{
		RequestHeaders: &extprocv3.HeadersResponse{}}})
}

func (x *exchange) requestBody(b *extprocv3.HttpBody) error {
	if x.responded {
		return nil
	}
	if x.picked != nil {
		// A body after the pick (a proxy that sends one in mode NONE, or
		// twice): passed on as it is, never picked again (the first
		// pick's load would stay booked).
		return x.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{
			RequestBody: &extprocv3.BodyResponse{}}})
	}
	x.sawBody = true
	s := x.s
	if !x.bodyHeld {
		s.bodiesMu.Lock()
		ok := s.m.bodies.Fits(1, 0)
		if ok {
			s.m.bodies.Add(1, 0)
		}
		s.bodiesMu.Unlock()
		if !ok {
			return x.refuse(&oai.Error{Status: http.StatusServiceUnavailable, Type: oai.TypeServer, Code: "too_many_bodies",
				Message: "too many request bodies being read at once; retry later"})
		}
		x.bodyHeld = true
	}
	if limit := s.fe.MaxBodyBytes(); int64(len(x.body))+int64(len(b.GetBody())) > limit {
		// The rest of the body is not read: the request ends here.
		x.releaseBody()
		return x.refuse(&oai.Error{Status: http.StatusRequestEntityTooLarge, Type: oai.TypeInvalidRequest,
			Code: "request_too_large", Message: "request body exceeds the limit of " + strconv.FormatInt(limit, 10) + " bytes"})
	}
	before := cap(x.body)
	x.body = append(x.body, b.GetBody()...)
	s.m.bodies.Add(0, int64(cap(x.body)-before))
	if !b.GetEndOfStream() {
		if x.reqMode == filterv3.ProcessingMode_STREAMED {
			// Each chunk gets its answer; the pick rides on the last one.
			return x.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{
				RequestBody: &extprocv3.BodyResponse{}}})
		}
		return nil
	}
	err := x.pickAndAnswer(true)
	x.releaseBody() // answered (forwarded or refused): not needed any more
	return err
}

// releaseBody drops the request body and its count in m.bodies.
func (x *exchange) releaseBody() {
	if !x.bodyHeld {
		return
	}
	x.s.m.bodies.Add(-1, -int64(cap(x.body)))
	x.body, x.bodyHeld = nil, false
}

// trackResponse keeps m.answers in step with what the pick buffers to
// parse the answer, and counts a stream whose parsing was given up.
func (x *exchange) trackResponse() {
	n := x.picked.Buffered()
	x.s.m.answers.Add(int64(btoi(n > 0)-btoi(x.resHeld > 0)), int64(n-x.resHeld))
	x.resHeld = n
	if !x.unparsed && x.picked.Unparsed() {
		x.unparsed = true
		x.s.m.unparsed.Inc()
		x.log().Debug("answer not parsed: a line or answer beyond the parse bound", "request_id", x.picked.ID)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// refuse ends the exchange with an ImmediateResponse for e, counted as a
// pick of its status.
func (x *exchange) refuse(e *oai.Error) error {
	x.s.m.picks.WithLabelValues(strconv.Itoa(e.Status)).Inc()
	x.responded = true
	return x.send(immediate(e))
}

// pickAndAnswer picks the endpoint for the request read so far and
// answers: in FULL_DUPLEX_STREAMED with the delayed headers response then
// the body echoed back (end of stream as given); in BUFFERED (or
// STREAMED) with the body response; for a request without a body with the
// headers response. No eligible endpoint answers an ImmediateResponse.
func (x *exchange) pickAndAnswer(eos bool) error {
	s := x.s
	if x.picked != nil {
		return nil // picked once per stream
	}
	if x.sawBody && clientKVTransfer(x.body) {
		return x.refuse(oai.BadRequest("kv_transfer_params", "kv_transfer_params is set by the serving stack, not by clients"))
	}
	t0 := time.Now()
	in := frontend.PickRequest{Path: x.path, Header: x.header, Body: x.body, Fallbacks: s.cfg.Fallbacks}
	if x.hasSubset {
		in.Allow = s.fe.WorkersAt(x.subset)
	}
	in.Placement = x.place
	p, e := (*frontend.Picked)(nil), x.placeErr
	if e == nil {
		p, e = s.fe.Pick(x.stream.Context(), in)
	}
	s.m.pick.Observe(time.Since(t0).Seconds())
	if e != nil {
		return x.refuse(e)
	}
	s.m.picks.WithLabelValues("200").Inc()
	x.picked = p
	dest := frontend.HostPort(p.Worker.URL)
	for _, f := range p.Fallbacks {
		dest += "," + frontend.HostPort(f.Worker.URL)
	}
	body := x.body
	changed := false
	if p.Body != nil && string(p.Body) != string(x.body) {
		body, changed = p.Body, true
	}
	mut := &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader(HeaderDestination, dest)}}
	if changed {
		mut.SetHeaders = append(mut.SetHeaders, setHeader("content-length", strconv.Itoa(len(body))))
	}
	md := destinationMetadata(s.cfg.DestinationNamespace, dest)
	x.log().Debug("picked", "request_id", p.ID, "worker", p.Worker.ID, "endpoint", dest,
		"overlap_blocks", p.Decision.Overlap[0], "cost", p.Decision.Cost)
	wasAnswered := x.answered
	x.answered = true
	if !wasAnswered {
		// The headers are still waiting (full duplex, or no body): the
		// pick goes with their answer.
		if err := x.send(&extprocv3.ProcessingResponse{DynamicMetadata: md,
			Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{
				Response: &extprocv3.CommonResponse{HeaderMutation: mut}}}}); err != nil {
			return err
		}
		if x.reqMode != filterv3.ProcessingMode_FULL_DUPLEX_STREAMED || !x.sawBody {
			return nil
		}
		for len(body) > maxChunk {
			if err := x.send(streamedBody(true, body[:maxChunk], false)); err != nil {
				return err
			}
			body = body[maxChunk:]
		}
		return x.send(streamedBody(true, body, eos))
	}
	cr := &extprocv3.CommonResponse{HeaderMutation: mut}
	if changed {
		cr.BodyMutation = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: body}}
	}
	return x.send(&extprocv3.ProcessingResponse{DynamicMetadata: md,
		Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{Response: cr}}})
}

// checkServed reads the endpoint the proxy reports as served (under
// envoy.lb). One of the pick's fallbacks takes the request's load over
// (the proxy retried down the list); any other endpoint is counted, and
// the load stays booked on the pick.
func (x *exchange) checkServed(req *extprocv3.ProcessingRequest) {
	st := req.GetMetadataContext().GetFilterMetadata()[x.s.cfg.DestinationNamespace]
	served := st.GetFields()[KeyDestinationServed].GetStringValue()
	p := x.picked
	picked := frontend.HostPort(p.Worker.URL)
	if served == "" || served == picked {
		return
	}
	for _, f := range p.Fallbacks {
		if frontend.HostPort(f.Worker.URL) != served {
			continue
		}
		x.s.m.servedFallback.Inc()
		if _, err := p.ServedBy(f.Worker.ID, time.Now()); err != nil {
			x.log().Warn("request served by a fallback endpoint; its load is not tracked", "request_id", p.ID,
				"picked", picked, "served", served, "err", err)
		} else {
			x.log().Debug("request served by a fallback endpoint", "request_id", p.ID, "picked", picked, "served", served)
		}
		return
	}
	x.s.m.servedElsewhere.Inc()
	x.log().Warn("request served by another endpoint than picked", "request_id", p.ID,
		"picked", picked, "served", served)
}

func (x *exchange) log() *slog.Logger { return x.s.log }

func (x *exchange) send(resp *extprocv3.ProcessingResponse) error {
	if x.observe {
		return nil
	}
	if err := x.stream.Send(resp); err != nil {
		return fmt.Errorf("epp: send: %w", err)
	}
	return nil
}

func streamedBody(request bool, b []byte, eos bool) *extprocv3.ProcessingResponse {
	br := &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{
		Mutation: &extprocv3.BodyMutation_StreamedResponse{StreamedResponse: &extprocv3.StreamedBodyResponse{
			Body: b, EndOfStream: eos}}}}}
	if request {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: br}}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: br}}
}

// immediate is the protocol's ImmediateResponse for a failed pick, with
// serve's OpenAI error body: 503 when nothing is eligible, 429 when every
// worker is overloaded, 400 for a bad request.
func immediate(e *oai.Error) *extprocv3.ProcessingResponse {
	code := e.Status
	if code == frontend.StatusOverloaded {
		code = http.StatusTooManyRequests
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
		ImmediateResponse: &extprocv3.ImmediateResponse{
			Status:  &typev3.HttpStatus{Code: typev3.StatusCode(code)},
			Headers: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader("content-type", "application/json")}},
			Body:    e.Body(),
			Details: "kvrouter_epp_" + strings.ReplaceAll(cmpOr(e.Code, e.Type), " ", "_"),
		}}}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func setHeader(k, v string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, RawValue: []byte(v)},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD}
}

// headerString is a header's value: Envoy sends raw_value (bytes) in
// recent versions, value in older ones.
func headerString(hv *corev3.HeaderValue) string {
	if len(hv.GetRawValue()) > 0 {
		return string(hv.GetRawValue())
	}
	return hv.GetValue()
}

func headerValue(hm *corev3.HeaderMap, key string) string {
	for _, hv := range hm.GetHeaders() {
		if strings.EqualFold(hv.GetKey(), key) {
			return headerString(hv)
		}
	}
	return ""
}

// subsetHint reads the subset list under ns (ok false when the key is
// not set; an empty list is set and allows nothing).
func subsetHint(md *corev3.Metadata, ns string) ([]string, bool) {
	st := md.GetFilterMetadata()[ns]
	v, ok := st.GetFields()[KeySubset]
	if !ok {
		return nil, false
	}
	var out []string
	if l := v.GetListValue(); l != nil {
		for _, e := range l.GetValues() {
			if s := e.GetStringValue(); s != "" {
				out = append(out, strings.TrimSpace(s))
			}
		}
	} else if s := v.GetStringValue(); s != "" {
		for _, p := range strings.Split(s, ",") {
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out, true
}

func destinationMetadata(ns, dest string) *structpb.Struct {
	return &structpb.Struct{Fields: map[string]*structpb.Value{ns: structpb.NewStructValue(&structpb.Struct{
		Fields: map[string]*structpb.Value{HeaderDestination: structpb.NewStringValue(dest)}})}}
}
