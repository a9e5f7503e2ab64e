package frontend

import (
	"bytes"
	"context"
	"github.com/kvrouter/kvrouter/internal/frontend/pool"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/router"
	"github.com/prometheus/client_golang/prometheus"
)

// Endpoints: the OpenAI APIs the frontend parses, also the endpoint label
// of kvrouter_requests_total.
const (
	EndpointCompletions = "completions"
	EndpointChat        = "chat"
	// EndpointOther is any other path a picker routes (by load alone).
	EndpointOther = "other"
)

// EndpointOf maps a request path to its endpoint ("" = not one the router
// parses).
func EndpointOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return EndpointChat
	case strings.HasSuffix(path, "/completions"):
		return EndpointCompletions
	}
	return ""
}

// HostPort is a worker URL's network endpoint, "ip:port" (the form the
// Gateway API endpoint picker protocol names endpoints in); "" when the
// URL has no host.
func HostPort(workerURL string) string { return pool.HostPort(workerURL) }

// PickRequest is one HTTP request a shell forwards itself (the Envoy
// endpoint picker): the router routes it as serve would, and the shell
// reports its response through the returned Picked.
type PickRequest struct {
	// Path is the request path. A path EndpointOf does not know (GET
	// /v1/models, ...) is routed by load alone, with an empty prompt.
	Path string
	// Header carries the routing headers serve reads (HeaderSession,
	// HeaderPriority, HeaderExpectedOutput). May be nil.
	Header http.Header
	// Body is the OpenAI request body.
	Body []byte
	// Allow, when non-nil, restricts the pick to these worker ids; an
	// empty non-nil list has no eligible worker (503).
	Allow []uint64
	// Fallbacks is how many other workers to list after the pick
	// (Picked.Fallbacks); 0 none.
	Fallbacks int
	// Placement is placement the shell itself asks for (trusted: no admin
	// key needed, unlike the placement headers); merged over the headers'.
	Placement *Placement
}

// maxAnswer bounds the non-streamed answer Picked keeps to read its
// usage (an OpenAI answer is far smaller; longer ones are not parsed).
const maxAnswer = 1 << 20

// MaxResponseLine bounds the SSE line Picked carries over between
// response chunks to read its events (serve's SSE reader has the same
// bound). A longer line gives the stream's parsing up (Picked.Unparsed):
// the body still goes to the client unchanged, only the router's token
// count and usage reading stop for that stream.
const MaxResponseLine = 1 << 20

// Picked is a routed request whose load the router holds until Done.
// Its methods are called from one goroutine (the request's stream).
type Picked struct {
	// ID is the request id (router.Request.ID).
	ID string
	// Worker is the chosen worker.
	Worker Worker
	// Decision is the router's decision.
	Decision router.Decision
	// Body is the body to forward: Request.Body less a client's engine
	// transfer fields (oai.EngineFields, stripped: guard.go), with a
	// completions text prompt replaced by its token ids when every worker
	// it may go to (Worker and the Fallbacks) may get ids (promptids.go
	// bodyFor).
	Body []byte
	// Fallbacks are up to PickRequest.Fallbacks other workers, the
	// cheapest first, for a proxy that retries down a list (ServedBy).
	Fallbacks []Fallback

	s        *Server
	j        *job
	f        *flight // the booking and what it teaches (flight.go)
	line     []byte  // SSE line carried over between chunks, up to MaxResponseLine
	unparsed bool    // a line outgrew MaxResponseLine: no more parsing
	sse      bool
	answer   []byte // a JSON answer, kept up to maxAnswer for its usage
}

// Pick parses, tokenizes and routes one request like serve's proxy does
// (same headers, same limits, same queue), and returns it placed. On
// error, the returned oai.Error is serve's answer to the same request
// (its Status is the HTTP status: 400, 413, 429, 503, ...).
func (s *Server) Pick(ctx context.Context, in PickRequest) (*Picked, *oai.Error) {
	ep := cmpOr(EndpointOf(in.Path), EndpointOther)
	fail := func(e *oai.Error) (*Picked, *oai.Error) {
		s.m.request(ep, statusLabel(e.Status))
		return nil, e
	}
	r := &http.Request{URL: &url.URL{Path: in.Path}, Header: in.Header}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	j, e := s.newJob(r, ep)
	if e == nil {
		e = s.setPlacement(r, j, in.Placement, true)
	}
	if e != nil {
		return fail(e)
	}
	if int64(len(in.Body)) > s.cfg.MaxBodyBytes {
		s.m.limitRejects.WithLabelValues("body_size").Inc()
		return fail(&oai.Error{Status: http.StatusRequestEntityTooLarge, Type: oai.TypeInvalidRequest,
			Code: "request_too_large", Message: "request body exceeds the limit of " + strconv.FormatInt(s.cfg.MaxBodyBytes, 10) + " bytes"})
	}
	if ep != EndpointOther {
		if e := s.prepare(ctx, j, in.Body); e != nil {
			return fail(e)
		}
	}
	if in.Allow != nil && len(in.Allow) == 0 {
		return fail(&oai.Error{Status: http.StatusServiceUnavailable, Type: oai.TypeServer, Code: "no_worker",
			Message: "no eligible worker for this request (the endpoint subset names no known worker)"})
	}
	j.allow = in.Allow
	j.lora = s.adapters.LoRA(j.model) // salts the hashes as the proxy does
	for {
		d, err := s.route(ctx, j, nil)
		if err != nil {
			return fail(routeError(err))
		}
		wk, ok := s.pool.Get(d.Worker.ID)
		if !ok { // removed between Route and here
			_ = s.rt.Fail(j.id, time.Now())
			continue
		}
		s.m.inflight.Inc()
		now := time.Now()
		fbs := s.fallbacks(&d, in.Fallbacks)
		body := s.bodyFor(j, wk.ID)
		for i := 0; i < len(fbs) && j.textPrompt; i++ {
			if !s.pool.ForwardIDs(fbs[i].Worker.ID) {
				body = j.body // one body goes down the whole list
				break
			}
		}
		p := &Picked{ID: j.id, Worker: *wk, Decision: d, Body: body, Fallbacks: fbs, s: s, j: j}
		// The gateway relays the answer: the flight hears of it from
		// ResponseHeaders, ResponseBody and Done.
		p.f = s.newFlight(j, &p.Decision, s.fits.begin(&d, now))
		p.f.status, p.f.lastTouch, p.f.noCheck = "200", now, true
		return p, nil
	}
}

// ResponseHeaders records the worker's answer: its HTTP status, and
// whether it streams (text/event-stream).
func (p *Picked) ResponseHeaders(status int, contentType string) {
	if status != 0 {
		p.f.status = statusLabel(status)
	}
	p.sse = strings.HasPrefix(contentType, "text/event-stream")
}

// ResponseBody records a chunk of the worker's answer at now: the first
// one marks the prefill done (the first token is out; serve's proxy
// does the same), later ones keep the request fresh. Streamed tokens
// are counted for the timing fit and the output-length average.
func (p *Picked) ResponseBody(chunk []byte, now time.Time) {
	if p.f.done || len(chunk) == 0 {
		return
	}
	p.f.chunk(now)
	if p.unparsed {
		return
	}
	if !p.sse {
		if len(p.answer)+len(chunk) <= maxAnswer {
			p.answer = append(p.answer, chunk...)
		} else {
			p.unparsed, p.answer = true, nil // too long to parse here
		}
		return
	}
	// Complete lines only: an SSE event may be split across chunks.
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		n := i
		if i < 0 {
			n = len(chunk)
		}
		if len(p.line)+n > MaxResponseLine {
			// No event is that long: the stream is not one to count.
			p.unparsed, p.line = true, nil
			return
		}
		if i < 0 {
			p.line = append(p.line, chunk...)
			return
		}
		line := chunk[:i]
		if len(p.line) > 0 {
			p.line = append(p.line, line...)
			line = p.line
		}
		if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
			data = bytes.TrimSpace(data)
			if len(data) > 0 && !bytes.Equal(data, []byte("[DONE]")) {
				p.f.event(now, data)
			}
		}
		p.line = p.line[:0]
		chunk = chunk[i+1:]
	}
}

// Outcomes of Done, as kvrouter_proxied_total counts them.
const (
	OutcomeOK            = "ok"
	OutcomeClientGone    = "client_gone"
	OutcomeUpstreamError = "upstream_error"
	OutcomeWorkerError   = "worker_error"
)

// Done frees the request's load (the end of the response, a broken
// stream or a reset) and counts it; outcome "" is OutcomeOK, or
// OutcomeWorkerError when the worker answered a non-200 status. Later
// calls do nothing.
func (p *Picked) Done(outcome string) {
	f := p.f
	if f.done {
		return
	}
	if outcome == "" {
		outcome = OutcomeOK
		if f.status != "200" {
			outcome = OutcomeWorkerError
		}
	}
	p.s.m.inflight.Dec()
	if outcome == OutcomeOK && !p.unparsed && !p.sse && len(p.answer) > 0 {
		f.usage(p.answer)
	}
	f.fail(outcome)
	f.unread = p.unparsed
	f.land(time.Now())
	p.line, p.answer = nil, nil
}

// Unparsed reports whether the answer's parsing was given up: an SSE
// line longer than MaxResponseLine, or a JSON answer longer than 1 MiB
// (its token count and usage are not read; nor is the output-length
// average or the timing fit fed from it).
func (p *Picked) Unparsed() bool { return p.unparsed }

// Buffered is the memory the pick holds to parse the answer (the SSE
// line carried over, or the JSON answer kept for its usage), in bytes of
// capacity; 0 after Done.
func (p *Picked) Buffered() int { return cap(p.line) + cap(p.answer) }

// MaxBodyBytes is the largest request body accepted (Config.MaxBodyBytes).
func (s *Server) MaxBodyBytes() int64 { return s.cfg.MaxBodyBytes }

// MaxBodies is how many request bodies may be read at once
// (Hardening.MaxBodies); 0 = no bound.
func (s *Server) MaxBodies() int { return positive(s.cfg.Hardening.MaxBodies) }

// Registry is the Prometheus registry of the frontend's metrics; shells
// around it (the endpoint picker) register theirs there too.
func (s *Server) Registry() *prometheus.Registry { return s.cfg.Registry }

// Logger is the frontend's logger (Config.Logger).
func (s *Server) Logger() *slog.Logger { return s.log }
