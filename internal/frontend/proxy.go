package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/queue"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// Header names.
const (
	HeaderSession  = "X-Session-Id"
	HeaderPriority = "X-Kvrouter-Priority"
	HeaderWorker   = "X-Kvrouter-Worker"
	HeaderOverlap  = "X-Kvrouter-Overlap-Blocks"
	HeaderCached   = "X-Kvrouter-Cached-Tokens"
	HeaderReqID    = "X-Request-Id"
	// HeaderDPRank carries the chosen data-parallel rank to the engine,
	// the header vLLM reads for it (X-data-parallel-rank, case-insensitive).
	HeaderDPRank = "X-Data-Parallel-Rank"
)

// job is one client request on its way to a worker.
type job struct {
	id     string
	path   string
	body   []byte             // forwarded body (bodyFor: with token ids or not)
	peer   *selector.PeerHint // the decision's peer-KV hint (peerhint.go)
	tokens []uint32
	// textPrompt: a completion whose text prompt was tokenized into
	// tokens, which bodyFor may forward in its place.
	textPrompt bool
	maxTokens  int
	stream     bool
	session    string
	tenant     string // header queue.TenantHeader: the fair queue's key
	priority   float64
	start      time.Time
	endpoint   string
	model      string
	hint       int // HeaderExpectedOutput; -1 = none
	// unstream: the client asked for one JSON body, the engine is asked
	// to stream (unstream.go).
	unstream bool
	// lora is the LoRA adapter the request's model names ("" = base
	// model): it salts the block hashes (package pool learns them).
	lora string
	// allow, when non-nil, restricts the request to these workers
	// (Pick's endpoint subset).
	allow []uint64
	// salt is the request's cache_salt (HeaderCacheSalt, else the body's);
	// saltHeader is HeaderCacheSalt's value ("" absent).
	salt, saltHeader string
	// place is the request's placement (placement.go); nil none.
	place *Placement
	// cands is the buffer the next route fills with the decision's
	// candidates (router.Request.Candidates; candbufs.go), set by the
	// proxy around its route only.
	cands []selector.Breakdown
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *oai.Error) {
	release, e := s.acquireBody()
	if e != nil {
		return nil, e
	}
	defer release()
	b, err := readAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), r.ContentLength, s.cfg.MaxBodyBytes)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.m.limitRejects.WithLabelValues("body_size").Inc()
			return nil, &oai.Error{Status: http.StatusRequestEntityTooLarge, Type: oai.TypeInvalidRequest,
				Code: "request_too_large", Message: fmt.Sprintf("request body exceeds the limit of %d bytes", s.cfg.MaxBodyBytes)}
		}
		return nil, oai.BadRequest("", "read request body: "+err.Error())
	}
	return b, nil
}

// readAll reads r to the end into a buffer sized from the request's
// Content-Length (when known and within limit), so a typical body costs
// one allocation and no copies instead of io.ReadAll's doubling from 512
// bytes (the frontend's largest allocation per request, bench frontend
// --memprofile). The first allocation is at most readAllPrealloc: a
// larger claimed length is grown into as bytes arrive, so a slow client
// announcing 8 MiB holds only what it sent.
func readAll(r io.Reader, contentLength, limit int64) ([]byte, error) {
	if contentLength <= 0 || contentLength > limit {
		return io.ReadAll(r)
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(contentLength, readAllPrealloc)+bytes.MinRead))
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

func (s *Server) newJob(r *http.Request, endpoint string) (*job, *oai.Error) {
	j := &job{
		id:       s.requestID(),
		path:     r.URL.Path,
		session:  r.Header.Get(HeaderSession),
		tenant:   r.Header.Get(queue.TenantHeader),
		start:    time.Now(),
		endpoint: endpoint,
	}
	if p := r.Header.Get(HeaderPriority); p != "" {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v != v || v < -MaxPriority || v > MaxPriority {
			return nil, oai.BadRequest(HeaderPriority, fmt.Sprintf("priority header must be a number in [-%g, %g]", MaxPriority, MaxPriority))
		}
		j.priority = v
	}
	if e := s.checkSession(j.session, HeaderSession); e != nil {
		return nil, e
	}
	if e := s.checkSession(j.tenant, queue.TenantHeader); e != nil {
		return nil, e
	}
	var e *oai.Error
	if j.hint, e = parseExpectedOutput(r.Header.Get(HeaderExpectedOutput)); e != nil {
		return nil, e
	}
	j.saltHeader = r.Header.Get(HeaderCacheSalt)
	p, e := placementHeaders(r.Header)
	if e != nil {
		return nil, e
	}
	if e := s.setPlacement(r, j, p, false); e != nil {
		return nil, e
	}
	return j, nil
}

// requestID is the next request id, prefix-N (one allocation).
func (s *Server) requestID() string {
	b := make([]byte, 0, 32)
	b = append(append(b, s.prefix...), '-')
	return string(strconv.AppendUint(b, s.reqSeq.Add(1), 10))
}

func (s *Server) checkPrompt(n int) *oai.Error {
	if n == 0 {
		return oai.BadRequest("prompt", "the prompt is empty")
	}
	if s.cfg.MaxPromptTokens > 0 && n > s.cfg.MaxPromptTokens {
		s.m.limitRejects.WithLabelValues("prompt_tokens").Inc()
		return &oai.Error{Status: http.StatusBadRequest, Type: oai.TypeInvalidRequest, Param: "prompt",
			Code:    "context_length_exceeded",
			Message: fmt.Sprintf("the prompt has %d tokens, more than this router's limit of %d", n, s.cfg.MaxPromptTokens)}
	}
	return nil
}

func (s *Server) fail(w http.ResponseWriter, endpoint string, e *oai.Error) {
	s.m.request(endpoint, statusLabel(e.Status))
	e.Write(w)
}

// begin starts a request on endpoint ep: a job (request id, headers) and
// the size-limited body. On failure it has already answered the client.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, ep string) (*job, []byte, bool) {
	j, e := s.newJob(r, ep)
	if e != nil {
		s.fail(w, ep, e)
		return nil, nil, false
	}
	body, e := s.readBody(w, r)
	if e != nil {
		s.fail(w, ep, e)
		return nil, nil, false
	}
	return j, body, true
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	s.handleOpenAI(w, r, EndpointCompletions)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	s.handleOpenAI(w, r, EndpointChat)
}

func (s *Server) handleOpenAI(w http.ResponseWriter, r *http.Request, ep string) {
	j, body, ok := s.begin(w, r, ep)
	if !ok {
		return
	}
	if e := s.prepare(r.Context(), j, body); e != nil {
		s.fail(w, ep, e)
		return
	}
	s.proxy(w, r, j)
}

// prepare parses body as j.endpoint's OpenAI request (EndpointCompletions
// or EndpointChat) and tokenizes its prompt into j, as the worker will
// (bodyFor decides per worker whether a completions text prompt is
// forwarded as these ids). The proxy and Pick share it.
func (s *Server) prepare(ctx context.Context, j *job, body []byte) *oai.Error {
	if j.endpoint == EndpointChat {
		req, err := oai.ParseChat(body)
		if err != nil {
			return asOAI(err)
		}
		j.body, j.stream, j.maxTokens, j.model = body, req.Stream, req.Limit(), req.Model
		if e := s.stripEngineFields(j, &req.EngineFields); e != nil {
			return e
		}
		t0 := time.Now()
		msgs, gen := routingMessages(req.Messages)
		j.tokens, err = s.encodeChat(ctx, msgs, gen)
		s.m.tokenize.Observe(time.Since(t0).Seconds())
		if err != nil {
			return tokenizeError(err)
		}
		return s.checkLimits(len(j.tokens), j.maxTokens)
	}
	req, err := oai.ParseCompletion(body)
	if err != nil {
		return asOAI(err)
	}
	j.body, j.stream, j.maxTokens, j.model = body, req.Stream, req.Limit(), req.Model
	if e := s.stripEngineFields(j, &req.EngineFields); e != nil {
		return e
	}
	if req.Prompt.IsTokens {
		j.tokens = req.Prompt.Tokens
	} else {
		t0 := time.Now()
		j.tokens, err = s.encode(ctx, req.Prompt.Text)
		s.m.tokenize.Observe(time.Since(t0).Seconds())
		if err != nil {
			return tokenizeError(err)
		}
		j.textPrompt = true
	}
	if e := j.setSalt(); e != nil {
		return e
	}
	return s.checkLimits(len(j.tokens), j.maxTokens)
}

// setSalt sets j.salt from HeaderCacheSalt or the body's cache_salt; a
// header salt the body does not carry is written into the forwarded body,
// so the engine salts its blocks as the router predicts.
func (j *job) setSalt() *oai.Error {
	salt, err := oai.ParseCacheSalt(j.body)
	if err != nil {
		return asOAI(err)
	}
	j.salt = salt
	if j.saltHeader == "" || j.saltHeader == salt {
		return nil
	}
	if j.body, err = oai.SetFields(j.body, map[string]any{"cache_salt": j.saltHeader}); err != nil {
		return oai.BadRequest("", err.Error())
	}
	j.salt = j.saltHeader
	return nil
}

func toMessages(in []oai.ChatMessageInput) []tokenizer.Message {
	out := make([]tokenizer.Message, len(in))
	for i, m := range in {
		out[i] = tokenizer.Message{Role: m.Role, Content: string(m.Content), Name: m.Name}
	}
	return out
}

func asOAI(err error) *oai.Error {
	var oe *oai.Error
	if errors.As(err, &oe) {
		return oe
	}
	return oai.Errorf(http.StatusInternalServerError, oai.TypeServer, err.Error())
}

func tokenizeError(err error) *oai.Error {
	var oe *oai.Error
	if errors.As(err, &oe) { // a bound of limits.go
		return oe
	}
	if errors.Is(err, tokenizer.ErrTemplate) || errors.Is(err, tokenizer.ErrNoChatTemplate) {
		return oai.BadRequest("messages", err.Error())
	}
	if errors.Is(err, context.Canceled) {
		return oai.Errorf(499, oai.TypeInvalidRequest, "client closed request")
	}
	return oai.Errorf(http.StatusBadGateway, oai.TypeServer, "tokenize: "+err.Error())
}

// routeError maps a router error to an OpenAI-style error.
func routeError(err error) *oai.Error {
	st := httpStatus(err)
	switch {
	case errors.Is(err, router.ErrBadRequest):
		return oai.BadRequest("", err.Error())
	case st == StatusOverloaded:
		return &oai.Error{Status: st, Type: oai.TypeOverloaded, Code: "overloaded",
			Message: "all workers are over their busy thresholds; retry later (" + err.Error() + ")"}
	case st == http.StatusServiceUnavailable:
		return &oai.Error{Status: st, Type: oai.TypeServer, Code: "no_worker",
			Message: "no eligible worker for this request (" + err.Error() + ")"}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return oai.Errorf(499, oai.TypeInvalidRequest, "client closed request")
	}
	return oai.Errorf(http.StatusInternalServerError, oai.TypeServer, err.Error())
}

// proxy routes j, forwards it and relays the answer, retrying other workers
// when the chosen one cannot be reached.
func (s *Server) proxy(w http.ResponseWriter, r *http.Request, j *job) {
	ctx := r.Context()
	release, e := s.acquireStream()
	if e != nil {
		s.fail(w, j.endpoint, e)
		return
	}
	defer release()
	s.m.inflight.Inc()
	defer s.m.inflight.Dec()
	s.prepareUnstream(j)
	j.lora = s.adapters.LoRA(j.model)
	if s.disagg(w, r, j) {
		return // served in two hops (disagg.go)
	}
	var tried []uint64
	for attempt := 0; ; attempt++ {
		f, err := s.place(ctx, j, tried)
		if err != nil {
			s.fail(w, j.endpoint, routeError(err))
			return
		}
		d := f.d
		wk, ok := s.pool.Get(d.Worker.ID)
		if !ok { // removed between Route and here
			f.abort(time.Now())
			tried = append(tried, d.Worker.ID)
			continue
		}
		j.peer = d.PeerHint // peerhint.go
		resp, err := s.forward(ctx, wk, j, d.Worker.Rank)
		if err != nil {
			f.abort(time.Now())
			s.kickRelease()
			if ctx.Err() != nil {
				s.m.request(j.endpoint, "499")
				return
			}
			s.log.Warn("worker unreachable", "worker", wk.ID, "request_id", j.id, "err", err)
			s.pool.MarkDown(wk.ID)
			if attempt < s.cfg.Retries {
				s.m.retries.Inc()
				tried = append(tried, wk.ID)
				continue
			}
			s.fail(w, j.endpoint, &oai.Error{Status: http.StatusBadGateway, Type: oai.TypeServer,
				Code: "worker_unreachable", Message: fmt.Sprintf("worker %d unreachable: %v", wk.ID, err)})
			return
		}
		s.relay(w, r, j, f, resp)
		s.notePulled(j.peer, resp)
		return
	}
}

// place routes j, excluding tried workers, and starts its flight, which
// owns the decision and the buffer of its candidates (candbufs.go).
func (s *Server) place(ctx context.Context, j *job, tried []uint64) (*flight, error) {
	f := new(flight)
	cands := getCands()
	j.cands = *cands
	var err error
	f.dec, err = s.route(ctx, j, tried)
	j.cands = nil
	if err != nil { // cands not given back: a queued route may still fill it
		return nil, err
	}
	f.init(j, &f.dec, s.fits.begin(&f.dec, time.Now()), laterTracker{s}, s.flights)
	f.dlog, f.cands = s.dlog, cands
	return f, nil
}

// newFlight starts the flight of j, routed by d (fit: its timing-fit
// sample, nil none).
func (s *Server) newFlight(j *job, d *router.Decision, fit *fitObs) *flight {
	f := newFlight(j, d, fit, laterTracker{s}, s.flights)
	f.dlog = s.dlog
	return f
}

// route asks the router for a worker (the router applies the policy,
// round-robin and random included), excluding tried workers; a queued
// request waits for its release.
func (s *Server) route(ctx context.Context, j *job, tried []uint64) (router.Decision, error) {
	return s.routeHop(ctx, j, j.id, router.HopAggregated, tried)
}

// routerRequest is the router's view of one hop of j under request id id
// (no constraints yet).
func (s *Server) routerRequest(j *job, id string, hop router.Hop) router.Request {
	return router.Request{ID: id, Tokens: j.tokens, LoRA: j.lora, CacheSalt: j.salt, Priority: j.priority, Session: j.session,
		Tenant: j.tenant, OutputTokens: s.expectedOutput(j), Hop: hop}
}

// routeHop routes one hop of j under request id id (DESIGN.md §10;
// HopAggregated: the whole request).
func (s *Server) routeHop(ctx context.Context, j *job, id string, hop router.Hop, tried []uint64) (router.Decision, error) {
	t0 := time.Now()
	req := s.routerRequest(j, id, hop)
	if hop == router.HopPrefill {
		req.Session = "" // a session binds to the worker that decodes (and caches) it
	}
	req.Constraints.Allow = j.allow
	req.Candidates = j.cands
	req.Inputs = s.dlog.Sample() // nil unless this decision is logged
	if !j.constrain(&req.Constraints) {
		return router.Decision{}, fmt.Errorf("frontend: pinned worker %d is outside the request's endpoint subset: %w", *j.place.PinWorker, selector.ErrNoneEligible)
	}
	if len(tried) > 0 {
		ids := s.pool.Candidates(tried)
		if allow := req.Constraints.Allow; allow != nil {
			ids = slices.DeleteFunc(ids, func(id uint64) bool { return !slices.Contains(allow, id) })
		}
		if len(ids) == 0 {
			return router.Decision{}, fmt.Errorf("frontend: every worker failed: %w", selector.ErrNoneEligible)
		}
		req.Constraints.Allow = ids
	}
	var wait chan router.Released
	if s.cfg.Router.Queue.Threshold > 0 {
		wait = make(chan router.Released, 1)
		s.waitMu.Lock()
		s.waiters[id] = wait
		s.waitMu.Unlock()
		defer func() {
			s.waitMu.Lock()
			delete(s.waiters, id)
			s.waitMu.Unlock()
		}()
	}
	d, err := s.rt.Route(ctx, req, time.Now())
	if err != nil || !d.Queued {
		s.tm.routed(j.tenant, time.Time{}, err)
		if err == nil {
			s.m.route.Observe(time.Since(t0).Seconds())
			s.kickSettle() // the booking (settle.go)
		}
		return d, err
	}
	s.tm.queued.WithLabelValues(s.tm.label(j.tenant)).Inc()
	queuedAt := time.Now()
	select {
	case rel := <-wait:
		s.tm.routed(j.tenant, queuedAt, rel.Err)
		return rel.Decision, rel.Err
	case <-ctx.Done():
		_ = s.rt.Free(id, time.Now())
		return router.Decision{}, ctx.Err()
	}
}

func (s *Server) forward(ctx context.Context, wk *Worker, j *job, rank uint32) (*http.Response, error) {
	hdr := http.Header{}
	body := s.withPeerHint(hdr, s.bodyFor(j, wk.ID), wk, j.peer)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, wk.URL+j.path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = hdr
	req.Header.Set("Content-Type", "application/json")
	if j.stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	req.Header.Set(HeaderReqID, j.id)
	if wk.Info.DPSize > 1 {
		// vLLM reads it to pin the request to this data-parallel
		// rank (its _get_data_parallel_rank).
		req.Header.Set(HeaderDPRank, strconv.FormatUint(uint64(rank), 10))
	}
	return s.client.Do(req)
}

// relay copies the worker's answer to the client and tells f what it
// copied (flight.go); f lands when relay returns.
func (s *Server) relay(cw http.ResponseWriter, r *http.Request, j *job, f *flight, resp *http.Response) {
	defer resp.Body.Close()
	w := newClientWriter(cw, s.cfg.Hardening.StreamWriteTimeout)
	buf := &streamBuf{st: s.sb}
	defer buf.release()
	isSSE := bytes.HasPrefix([]byte(resp.Header.Get("Content-Type")), []byte("text/event-stream"))
	var agg *unstreamer // non-nil: fold the stream into one JSON body
	if j.unstream && isSSE && resp.StatusCode == http.StatusOK {
		agg = newUnstreamer(j.endpoint == "chat", s.cfg.Hardening.MaxAnswerBytes)
		agg.total = buf
		w.Header().Set("Content-Type", "application/json")
	} else {
		for _, k := range []string{"Content-Type", "Cache-Control"} {
			if v := resp.Header.Get(k); v != "" {
				w.Header().Set(k, v)
			}
		}
	}
	setRouteHeaders(w.Header(), j.id, f.d)
	if agg == nil {
		w.WriteHeader(resp.StatusCode)
	}
	f.answered(resp.StatusCode, time.Now())
	defer func() {
		if w.timedOut {
			f.fail("client_slow")
		}
		f.land(time.Now())
	}()
	switch {
	case resp.StatusCode != http.StatusOK:
		f.fail("worker_error")
		if _, err := io.Copy(w, resp.Body); err != nil {
			f.fail(s.copyOutcome(r))
		}
	case !isSSE:
		s.relayJSON(w, r, f, resp.Body, buf)
	default:
		s.relayStream(w, r, f, resp.Body, buf, agg)
	}
}

// setRouteHeaders tells the client where d sent request id. The values
// share one backing array and the names are canonical already, so this
// is h.Set of each with one allocation instead of five.
func setRouteHeaders(h http.Header, id string, d *router.Decision) {
	v := make([]string, 5)
	v[0] = strconv.FormatUint(d.Worker.ID, 10)
	v[1] = strconv.Itoa(d.Overlap[kvevents.TierDevice])
	v[2] = tierOverlapHeader(&d.Overlap)
	v[3] = strconv.Itoa(d.CachedTokens)
	v[4] = id
	h[HeaderWorker], h[HeaderOverlap], h[HeaderTierOverlap] = v[0:1:1], v[1:2:2], v[2:3:3]
	h[HeaderCached], h[HeaderReqID] = v[3:4:4], v[4:5:5]
}

// relayJSON copies a non-streaming JSON answer (an engine that ignored
// stream=true, or a body that could not be rewritten): buffered for its
// usage up to MaxAnswerBytes, relayed unbuffered beyond (its usage then
// not read).
func (s *Server) relayJSON(w *clientWriter, r *http.Request, f *flight, src io.Reader, buf *streamBuf) {
	body, err := s.readAnswerShared(src, buf)
	long := errors.Is(err, errAnswerTooLarge)
	if long {
		s.gm.answerTooLong.WithLabelValues("json").Inc()
		err = nil
	}
	if _, werr := w.Write(body); werr != nil && err == nil {
		err = werr
	}
	if long && err == nil {
		_, err = io.Copy(w, src)
	}
	if err != nil {
		f.fail(s.copyOutcome(r))
		return
	}
	if long {
		body = nil
	}
	f.body(time.Now(), body)
}

// relayStream copies an SSE answer event by event (agg non-nil: folds it
// into one JSON body instead).
func (s *Server) relayStream(w *clientWriter, r *http.Request, f *flight, src io.Reader, buf *streamBuf, agg *unstreamer) {
	rd := oai.NewSSEReader(src, 0)
	defer rd.Close()
	var rdHeld int64 // rd's buffers, as counted in buf
	for {
		ev, err := rd.Next()
		buf.track(&rdHeld, int64(rd.BufferBytes()))
		if len(ev.Raw) > 0 {
			if agg != nil {
				if len(ev.Data) > 0 && !ev.IsDone() {
					if aerr := agg.add(ev.Data); aerr != nil && err == nil {
						err = aerr
						if errors.Is(aerr, errAnswerTooLarge) {
							s.gm.answerTooLong.WithLabelValues("folded").Inc()
						}
					}
				}
			} else if _, werr := w.Write(ev.Raw); werr != nil {
				f.fail("client_gone")
				return
			}
			// Flush once per burst: more events already buffered will
			// follow immediately (NB: never holds an event back waiting
			// for the network).
			if agg == nil && (err != nil || rd.Buffered() == 0) {
				if w.Flush(); w.err != nil {
					f.fail("client_gone")
					return
				}
			}
			if len(ev.Data) > 0 && !ev.IsDone() {
				f.data(time.Now(), ev.Data)
			}
		}
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			if agg != nil {
				s.writeUnstreamed(w, agg, f.d.Worker.ID, &f.outcome, &f.status)
			}
			return
		}
		f.fail(s.copyOutcome(r))
		if f.outcome != "upstream_error" {
			return
		}
		e := &oai.Error{Status: http.StatusBadGateway, Type: oai.TypeServer, Code: "worker_stream_error",
			Message: fmt.Sprintf("worker %d stream broke: %v", f.d.Worker.ID, err)}
		if agg != nil {
			f.status = strconv.Itoa(e.Status)
			e.Write(w)
			return
		}
		_ = oai.WriteEvent(w, e.Body())
		w.Flush()
		return
	}
}

func (s *Server) copyOutcome(r *http.Request) string {
	if r.Context().Err() != nil {
		return "client_gone"
	}
	return "upstream_error"
}
