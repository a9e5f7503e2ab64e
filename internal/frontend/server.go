package frontend

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"github.com/kvrouter/kvrouter/internal/decisionlog"
	"github.com/kvrouter/kvrouter/internal/frontend/pool"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/bounds"
	"github.com/kvrouter/kvrouter/internal/frontend/sink"
	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The pool's types, part of the frontend's API (internal/frontend/pool).
type (
	// Worker is one upstream worker.
	Worker = pool.Worker
	// EngineHealth is a worker's health line in GET /debug/index.
	EngineHealth = pool.EngineHealth
	// SelfTest is a worker's tokenizer self-test result.
	SelfTest = pool.SelfTest
	// Mismatch is where a self-test's canary differed.
	Mismatch = pool.Mismatch
)

// Tokenizer self-test outcomes (pool.SelfTestMatch and the others).
const (
	SelfTestMatch       = pool.SelfTestMatch
	SelfTestMismatch    = pool.SelfTestMismatch
	SelfTestUnavailable = pool.SelfTestUnavailable
	SelfTestError       = pool.SelfTestError
)

// adapterNames says which model names are LoRA adapters (*pool.Pool: the
// configured ones and those its polls learn). Read on every proxied
// request: LoRA must not block on a poll.
type adapterNames interface {
	LoRA(model string) string
}

var _ adapterNames = (*pool.Pool)(nil)

// Server is the frontend. Build with New.
type Server struct {
	cfg    Config
	log    *slog.Logger
	rt     *router.Router
	client *http.Client
	m      *metrics
	dm     *disaggMetrics        // disagg.go
	fits   *timingFits           // Config.TimingFit; nil when off
	outAvg *router.OutputAverage // Router.TrackOutputBlocks; nil when off

	flights  *flightRecorder    // what proxied requests teach (flight.go)
	preds    *predictionTracker // predicted vs reported hits (predict.go)
	removals *removalEpochs     // workers' applied removals (regret.go)
	adapters adapterNames       // LoRA adapter names, the pool's

	dlog *decisionlog.Writer // Config.DecisionLog; nil when off

	sink *sink.Sink // KV events into the index
	pool *pool.Pool // the workers (internal/frontend/pool)

	reqSeq atomic.Uint64
	prefix string

	waitMu  sync.Mutex
	waiters map[string]chan router.Released
	kick    chan struct{} // cap 1: try Release now
	settle  chan struct{} // cap 1: settle the router's bookkeeping now (settle.go)

	draining atomic.Bool
	handler  http.Handler
	bk       bookings // tracked /route decisions (bookings.go)
	gm       *guardMetrics
	lim      limiter       // bodies and tokenizations in flight (limits.go)
	sb       *bounds.Store // proxied requests and their relays' buffers (streambufs.go)
	drain    drainState
	tm       *tenantMetrics // per-tenant counters (tenants.go)
}

// New validates cfg and builds a server. It starts nothing.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		client:  &http.Client{Transport: cfg.Transport},
		prefix:  strconv.FormatUint(seed%100000, 36),
		waiters: make(map[string]chan router.Released),
		kick:    make(chan struct{}, 1),
		settle:  make(chan struct{}, 1),

		preds:    newPredictionTracker(),
		removals: &removalEpochs{},
	}
	s.m = newMetrics(cfg.Registry, s)
	s.dm = newDisaggMetrics(cfg.Registry)
	s.gm = newGuardMetrics(cfg.Registry)
	s.tm = newTenantMetrics(cfg.Registry, s)
	s.bk.store = bounds.New("bookings", int64(positive(cfg.Hardening.MaxBookings)), positive(cfg.Hardening.MaxBookingBytes))
	s.lim.queue = newTokenizeQueue(cfg.Hardening)
	s.sb = newStreamBuffers(cfg.Hardening)
	cfg.Registry.MustRegister(s.bk.store, s.lim.queue, s.sb)
	// Every index gets its kind's config from Router.Index (flash stride,
	// approx TTL, writers, capacity hint): the router builds the
	// approximate one from it, and the event-fed ones are built here, one
	// per tier, each behind indexer.Concurrent's sticky writers (DESIGN.md
	// §3 Concurrency):
	// events of one worker+rank are applied in order by one writer
	// goroutine, lookups stay inline on the request goroutines. The
	// writers report outcomes, so metrics and Events.OnEvent see an
	// event once it is visible to lookups, not when it was queued.
	s.sink = sink.New(sink.Config{Logger: cfg.Logger, Registry: cfg.Registry, Stored: s.preds.sawStored, Removed: s.removals.saw, OnEvent: cfg.Events.OnEvent})
	opts := router.Options{
		Rand: rand.New(rand.NewPCG(seed, seed+1)),
		NewIndex: func(t kvevents.Tier) indexer.Index {
			var ix indexer.Index
			if cfg.Index == IndexRadix {
				ix = indexer.NewRadix(cfg.Router.Index.Radix)
			} else {
				ix = indexer.NewFlash(cfg.Router.Index.Flash)
			}
			// Hybrid workers are credited their joint match over KV cache
			// groups (DESIGN.md §13); the overlay sits under the writers,
			// so each worker's group events follow its full ones in order.
			ix = indexer.NewGroups(ix, cfg.Router.GroupsConfig())
			return s.sink.Writer(t, ix, cfg.Router.Index.Concurrent)
		},
		// Bookings and ends are settled off the request path (settle.go).
		Deferred: true,
		Events: router.Events{
			OnRoute:   s.m.onRoute,
			OnReject:  s.m.onReject,
			OnSweep:   func(ids []string) { s.m.swept.Add(float64(len(ids))) },
			OnBooking: cfg.Events.OnBooking,
		},
	}
	rt, err := router.New(cfg.Router, opts)
	if err != nil {
		return nil, fmt.Errorf("frontend: %w", err)
	}
	s.rt = rt
	if s.dlog, err = decisionlog.Open(cfg.DecisionLog); err != nil {
		return nil, fmt.Errorf("frontend: %w", err)
	}
	registerDecisionLog(cfg.Registry, s.dlog)
	s.pool = pool.New(pool.Config{Logger: cfg.Logger, Client: s.client, Registry: cfg.Registry,
		BlockSize: cfg.Router.BlockSize, LoadPollInterval: cfg.LoadPollInterval,
		WorkerMaxBatchedTokens: cfg.WorkerMaxBatchedTokens, WorkerMaxNumSeqs: cfg.WorkerMaxNumSeqs,
		LoRAAdapters: cfg.LoRAAdapters, Model: cfg.Model, Tokenizer: cfg.Tokenizer, OwnTokenizer: cfg.OwnTokenizer,
		ForwardTokens: cfg.ForwardTokens, OnWorkerDown: cfg.Events.OnWorkerDown, OnWorkerUp: cfg.Events.OnWorkerUp}, rt)
	s.adapters = s.pool
	s.sink.Attach(rt, sink.RanksFunc(s.pool.DPSize))
	if cfg.TimingFit && cfg.Router.Selector.Cost == selector.CostTime {
		s.fits = newTimingFits(cfg.Registry, rt, cfg.Router.Selector.Timing)
	}
	s.outAvg = newOutputAverage(cfg.Router)
	s.flights = &flightRecorder{m: s.m, gm: s.gm, fits: s.fits, outAvg: s.outAvg, kick: s.kickRelease,
		onFree: cfg.Events.OnFree, blockSize: cfg.Router.BlockSize, engines: s.pool, preds: s.preds, removals: s.removals, log: s.log}
	s.handler = s.routes()
	return s, nil
}

// Router exposes the routing core (for event ingestion and tests).
func (s *Server) Router() *router.Router { return s.rt }

// Handler is the HTTP API.
func (s *Server) Handler() http.Handler { return s.handler }

// Run runs the background loops (load polling, stale sweep, queue release,
// the router's deferred bookkeeping) until ctx is done.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if s.cfg.LoadPollInterval > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); s.pool.Run(ctx) }()
	}
	wg.Add(2)
	go func() { defer wg.Done(); s.releaseLoop(ctx) }()
	go func() { defer wg.Done(); s.settleLoop(ctx) }()
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case now := <-t.C:
			s.rt.Sweep(now)
		}
	}
}

// Serve runs the background loops and an HTTP server on ln until ctx is
// done, then stops accepting, lets in-flight streams finish (up to
// Config.DrainTimeout) and returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	bgDone := make(chan error, 1)
	go func() { bgDone <- s.Run(bg) }()
	srv := &http.Server{Handler: s.drainGate(s.handler), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: positive(s.cfg.Hardening.BodyTimeout), IdleTimeout: positive(s.cfg.Hardening.IdleTimeout)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
		s.draining.Store(true)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.DrainTimeout)
		s.awaitIdle(sctx) // the listener stays open: /readyz answers 503 meanwhile
		if e := srv.Shutdown(sctx); e != nil {
			s.log.Warn("drain timed out; closing remaining streams", "err", e)
			_ = srv.Close()
		}
		cancel()
		<-errc
	case err = <-errc:
	}
	stopBG()
	<-bgDone
	if e := s.dlog.Close(); e != nil {
		s.log.Warn("decision log", "err", e)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	client := s.auth(false)
	admin := s.auth(true)
	mux.Handle("POST /v1/completions", client(http.HandlerFunc(s.handleCompletions)))
	mux.Handle("POST /v1/chat/completions", client(http.HandlerFunc(s.handleChat)))
	mux.Handle("GET /v1/models", client(http.HandlerFunc(s.handleModels)))
	mux.Handle("POST /route", client(http.HandlerFunc(s.handleRoute)))
	mux.Handle("POST /route/{id}/prefill_done", client(http.HandlerFunc(s.handleRouteLifecycle)))
	mux.Handle("POST /route/{id}/free", client(http.HandlerFunc(s.handleRouteLifecycle)))
	mux.Handle("GET /debug/index", admin(http.HandlerFunc(s.handleDebugIndex)))
	mux.Handle("GET /debug/router", admin(http.HandlerFunc(s.handleDebugRouter)))
	for pattern, h := range s.cfg.AdminHandlers {
		mux.Handle(pattern, admin(h))
	}
	metrics := http.Handler(promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{}))
	if s.cfg.Hardening.MetricsAuth {
		metrics = admin(metrics)
	}
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", s.handleReady)
	s.routeExtras(mux, admin)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowed(mux, r); allow != "" {
			w.Header().Set("Allow", allow)
			oai.Errorf(http.StatusMethodNotAllowed, oai.TypeInvalidRequest, r.Method+" is not allowed on "+r.URL.Path+" (allowed: "+allow+")").Write(w)
			return
		}
		oai.Errorf(http.StatusNotFound, oai.TypeNotFound, "no route for "+r.Method+" "+r.URL.Path).Write(w)
	})
	return mux
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	n := s.pool.Up() // down or refused workers do not count
	ok, detail := true, ""
	if s.cfg.Readiness != nil {
		ok, detail = s.cfg.Readiness()
		detail = "\n" + detail
	}
	switch {
	case s.draining.Load():
		http.Error(w, "draining"+detail, http.StatusServiceUnavailable)
	case !ok:
		http.Error(w, "not ready"+detail, http.StatusServiceUnavailable)
	case n == 0:
		why := s.pool.NotUp()
		if why != "" {
			why = ": " + why + "; see the log"
		}
		http.Error(w, "no workers up"+why+detail, http.StatusServiceUnavailable)
	default:
		_, _ = w.Write([]byte("ready: " + strconv.Itoa(n) + " workers" + detail + "\n"))
	}
}

// ApplyRemote applies another replica's booking to the router (it fits
// the load sync's target, DESIGN.md §9) and, since a remote free lowers
// load, lets queued requests try again.
func (s *Server) ApplyRemote(origin string, b router.Booking, now time.Time) error {
	err := s.rt.ApplyRemote(origin, b, now)
	if b.Kind != router.BookRoute && b.Kind != router.BookBind {
		s.kickRelease()
	}
	return err
}

// DropOrigin drops a silent replica's bookings (router.DropOrigin) and
// lets queued requests try again.
func (s *Server) DropOrigin(origin string) int {
	n := s.rt.DropOrigin(origin)
	if n > 0 {
		s.kickRelease()
	}
	return n
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, oai.ModelList{Object: "list", Data: []oai.Model{{
		ID: s.cfg.Model, Object: "model", OwnedBy: "kvrouter"}}})
}

// auth returns a middleware that checks bearer keys: client keys (or admin
// keys) for the client API, admin keys for admin endpoints.
func (s *Server) auth(admin bool) func(http.Handler) http.Handler {
	keys := s.cfg.AdminKeys
	if admin && len(keys) == 0 {
		keys = s.cfg.APIKeys // no admin keys: admin endpoints take client keys
	}
	if !admin {
		keys = append(slices.Clone(s.cfg.APIKeys), s.cfg.AdminKeys...)
		if len(s.cfg.APIKeys) == 0 {
			keys = nil // client API open when no client keys are set
		}
	}
	return func(next http.Handler) http.Handler {
		if len(keys) == 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got, ok := bearer(r)
			if ok {
				for _, k := range keys {
					if subtle.ConstantTimeCompare([]byte(got), []byte(k)) == 1 {
						next.ServeHTTP(w, r)
						return
					}
				}
			}
			s.m.authFailures.Inc()
			e := &oai.Error{Status: http.StatusUnauthorized, Type: oai.TypeAuthentication, Code: "invalid_api_key",
				Message: "Incorrect or missing API key. Send it as 'Authorization: Bearer <key>'."}
			w.Header().Set("WWW-Authenticate", `Bearer realm="kvrouter"`)
			e.Write(w)
		})
	}
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if v, ok := strings.CutPrefix(h, "Bearer "); ok {
		return strings.TrimSpace(v), true
	}
	if v := r.Header.Get("x-api-key"); v != "" {
		return v, true
	}
	return "", false
}
