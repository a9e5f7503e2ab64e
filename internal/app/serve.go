package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/internal/replica"
	"github.com/kvrouter/kvrouter/router"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
)

// RunServe runs `kvrouter serve` until ctx is done: NewServe, then Run.
func RunServe(ctx context.Context, cfg ServeConfig) error {
	s, err := NewServe(cfg)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// Serve is the serve runtime: the frontend (router core inside), the
// worker membership, and, while Run runs, the event plane. Build with
// NewServe (binds the listener, starts nothing), then Run.
type Serve struct {
	cfg     ServeConfig
	log     *slog.Logger
	fe      *frontend.Server
	members *discovery.Fleet
	static  []discovery.Worker
	ln      net.Listener
	ready   chan struct{}

	mu   sync.Mutex
	conn *eventplane.Conn // set in Run (NATS on)
	rep  *replica.Replica // set in Run (NATS on)
	// loadSync is set in Run (NATS on, sync on); the router's booking
	// callback reads it on request goroutines.
	loadSync atomic.Pointer[replica.LoadSync]
	// zmq is the ZMQ subscriber (set in Run with static ZMQ workers or
	// --zmq-bind); a join kicks its held bind-mode messages.
	zmq atomic.Pointer[zmqsub.Subscriber]
	// gate holds NATS events of workers neither static nor registered
	// (gate.go).
	gate *memberGate
	pods podCache // bind-mode topic pods resolved to workers
	// natsWait is why Run is not connected to NATS yet ("" once it is,
	// or without NATS); /readyz answers 503 with it.
	natsWait atomic.Pointer[string]
}

// kickZMQ lets the bind subscriber apply events held for a new worker.
func (s *Serve) kickZMQ() {
	if z := s.zmq.Load(); z != nil {
		z.Kick()
	}
}

// ZMQ is the ZMQ subscriber (nil before Run, or with neither static ZMQ
// workers nor --zmq-bind).
func (s *Serve) ZMQ() *zmqsub.Subscriber { return s.zmq.Load() }

// NewServe validates cfg, loads the tokenizer, builds the frontend and
// binds the listener. It starts no goroutine; on error it closes what it
// opened.
func NewServe(cfg ServeConfig) (*Serve, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log, err := loggerOr(cfg.Logger, cfg.LogLevel)
	if err != nil {
		return nil, err
	}
	if err := LogFeatures(log, cfg.Frontend.Router.EnableFeature); err != nil {
		return nil, err
	}
	static := append([]discovery.Worker(nil), cfg.StaticWorkers...)
	for _, spec := range cfg.Workers {
		w, err := discovery.ParseWorkerFlag(spec)
		if err != nil {
			return nil, err
		}
		static = append(static, w)
	}
	if cfg.WorkersFile != "" {
		ws, err := discovery.LoadStatic(cfg.WorkersFile)
		if err != nil {
			return nil, err
		}
		static = append(static, ws...)
	}
	static, err = discovery.NumberWorkers(static)
	if err != nil {
		return nil, err
	}
	fc := cfg.Frontend
	fc.Logger = log
	if fc.Tokenizer = cfg.TokenizerImpl; fc.Tokenizer == nil {
		urls := cfg.TokenizerURLs
		if len(urls) == 0 {
			for _, w := range static {
				urls = append(urls, w.URL)
			}
		}
		t, err := ResolveTokenizer(cfg.Tokenizer, fc.Model, urls)
		if err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
		fc.Tokenizer, fc.OwnTokenizer = t.Tokenizer, t.Own
		logTokenizer(log, cfg.Tokenizer, fc, t)
	}
	s := &Serve{cfg: cfg, log: log, static: static, ready: make(chan struct{})}
	onDown := fc.Events.OnWorkerDown
	fc.Events.OnWorkerDown = func(id uint64) {
		if rep := s.Replica(); rep != nil {
			rep.Forget(id) // its next life may restart event ids
		}
		if onDown != nil {
			onDown(id)
		}
	}
	// Load sync (DESIGN.md §9) needs the NATS connection, made in Run;
	// the router hands its bookings here from the start.
	onBooking := fc.Events.OnBooking
	fc.Events.OnBooking = func(b router.Booking) {
		if ls := s.loadSync.Load(); ls != nil {
			ls.Publish(b)
		}
		if onBooking != nil {
			onBooking(b)
		}
	}
	fc.Readiness = s.readiness
	fc.AdminHandlers = map[string]http.Handler{"GET /debug/loads": http.HandlerFunc(s.handleLoads),
		"GET /debug/workers": http.HandlerFunc(s.handleWorkers)}
	if s.fe, err = frontend.New(fc); err != nil {
		return nil, err
	}
	if err := registerPromptCache(s.fe.Registry(), fc.Tokenizer); err != nil {
		return nil, err
	}
	s.gate = newMemberGate(s.fe, func(id uint64) bool { return s.members.Has(id) || slices.Contains(cfg.SharedStores, id) }, s.fe.CountIngest)
	s.members = discovery.NewFleet(fc.Router.BlockSize, s.fe, log)
	s.members.OnRefused = s.fe.CountWorkerRefused
	s.members.OnRestart = func(prev discovery.Worker) { s.ResetWorkerEvents(prev.ID, prev.DPSize) }
	if err := s.members.AddStatic(static); err != nil {
		return nil, err
	}
	if s.ln = cfg.Listener; s.ln == nil {
		if s.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
	}
	return s, nil
}

// Frontend is the HTTP frontend; Frontend().Router() is the routing core.
func (s *Serve) Frontend() *frontend.Server { return s.fe }

// Members is the worker membership (static workers and the registry's).
func (s *Serve) Members() *discovery.Fleet { return s.members }

// URL is the frontend's base URL, e.g. "http://127.0.0.1:8080".
func (s *Serve) URL() string { return "http://" + s.ln.Addr().String() }

// Config is the configuration s was built with.
func (s *Serve) Config() ServeConfig { return s.cfg }

// Ready is closed once Run has the event plane up and the index caught
// up: with NATS, the replica restored the newest snapshot and applied the
// stream up to where it stood at start (flushed through the index
// writers, not merely received; replica.Replica.Ready), and the worker
// registry was read once (before, registered workers are unknown and
// their requests would be refused).
func (s *Serve) Ready() <-chan struct{} { return s.ready }

// Conn is the NATS connection (nil before Run connected, or without NATS).
func (s *Serve) Conn() *eventplane.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// Replica keeps the index converged with the KV event stream, snapshots
// and load sync (nil before Run started it, or without NATS).
func (s *Serve) Replica() *replica.Replica {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rep
}

// LoadSync shares load and affinity with the other replicas (nil before
// Run started it, without NATS, or with Replica.Sync.Enabled false).
func (s *Serve) LoadSync() *replica.LoadSync { return s.loadSync.Load() }

// readiness is the frontend's extra /readyz condition: with NATS, the
// registry was read and the replica is caught up; the body carries its
// status (lag, snapshot).
func (s *Serve) readiness() (bool, string) {
	if !s.usesNATS() {
		return true, ""
	}
	if w := s.natsWait.Load(); w != nil && *w != "" {
		return false, *w
	}
	rep := s.Replica()
	if rep == nil {
		return false, "replica: not started"
	}
	if ok, why := s.readinessRegistry(); !ok {
		return false, why
	}
	st := rep.Status()
	return st.Ready, "replica " + rep.ID() + ": " + st.String()
}

// readinessRegistry: the registry's entries were read once (the member
// gate is strict from then on).
func (s *Serve) readinessRegistry() (bool, string) {
	if !s.gate.strict.Load() {
		return false, "registry: waiting for its first read"
	}
	return true, ""
}

// handleLoads serves GET /debug/loads: each worker's load with its local
// and remote parts, and the replicas heard through load sync.
func (s *Serve) handleLoads(w http.ResponseWriter, r *http.Request) {
	replica.LoadsHandler(s.fe.Router(), s.LoadSync()).ServeHTTP(w, r)
}

// WorkersView is the GET /debug/workers body: the members (static and
// registered) and the second live instances refused for their ids.
type WorkersView struct {
	Workers    []discovery.Worker    `json:"workers"`
	Duplicates []discovery.Duplicate `json:"duplicates"`
	Refused    uint64                `json:"refused"`
}

// handleWorkers serves GET /debug/workers.
func (s *Serve) handleWorkers(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(WorkersView{Workers: s.members.Workers(), Duplicates: s.members.Duplicates(), Refused: s.members.Refused()})
}

// NATSURL is the NATS server's client URL ("" without NATS or before Run
// connected).
func (s *Serve) NATSURL() string {
	if c := s.Conn(); c != nil {
		return c.ClientURL()
	}
	return ""
}

// usesNATS: --nats given, or no static worker (then the embedded server).
func (s *Serve) usesNATS() bool {
	return !s.cfg.NoNATS && (s.cfg.NATS.URL != "" || len(s.static) == 0)
}

// Run runs everything in one errgroup until ctx is done or a part fails:
// the index writers (indexer.Concurrent, sticky per worker+rank), the NATS
// event subscriber and registry watch (or the ZMQ subscribers of static
// workers), and the HTTP frontend. On ctx done the frontend drains first
// (in-flight streams finish, up to DrainTimeout) while events still flow;
// then the rest stops.
func (s *Serve) Run(ctx context.Context) error {
	log, fe := s.log, s.fe
	logConfig(log, "effective config", s.cfg.Redacted())
	// The event side outlives the HTTP drain: it stops when the frontend
	// has returned.
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	g, gctx := errgroup.WithContext(bg)
	// A failing part stops the frontend too.
	feCtx, stopFE := context.WithCancel(ctx)
	defer stopFE()
	go func() {
		<-gctx.Done()
		stopFE()
	}()
	g.Go(func() error { return fe.RunIndex(gctx) })

	var natsUp chan struct{} // closed once the replica and registry watch run
	if s.usesNATS() {
		natsUp = make(chan struct{})
		s.setNATSWait("connecting to NATS " + s.natsTarget())
		// NATS may come up after the router: connecting waits (with
		// capped backoff) while the frontend already answers, /readyz
		// with 503 and why.
		g.Go(func() error { return s.runNATS(gctx, g, natsUp) })
	}
	var sources []zmqsub.Source
	for _, w := range s.static {
		if w.EventEndpoint != "" {
			sources = append(sources, zmqsub.Source{WorkerID: w.ID, Endpoint: w.EventEndpoint,
				Replay: w.ReplayEndpoint, DPSize: max(w.DPSize, 1)})
		}
	}
	if len(sources) > 0 || len(s.cfg.ZMQBind) > 0 || s.cfg.ZMQDynamic {
		model := s.cfg.Frontend.Model
		drops := zmqDrops()
		zs := zmqsub.New(zmqsub.Config{BlockSize: s.cfg.Frontend.Router.BlockSize, Sources: sources, Logger: log,
			Dynamic: s.cfg.ZMQDynamic,
			OnBatch: fe.ObservePublished, Binds: s.cfg.ZMQBind, OnIngest: fe.CountIngest,
			MaxMessageBytes: s.cfg.ZMQMaxMessageBytes, HoldMaxBytes: s.cfg.ZMQHoldMaxBytes,
			OnPeerDropped: func(reason string) { drops.WithLabelValues(reason).Inc() },
			Resolve: func(pod, topicModel string) (uint64, error) {
				return s.pods.resolve(pod, topicModel, func() (uint64, error) {
					return resolvePod(s.members.Workers(), pod, topicModel, model)
				})
			}}, fe)
		if err := registerZMQ(fe.Registry(), drops, zs); err != nil {
			stopBG()
			_ = g.Wait()
			_ = s.ln.Close()
			return err
		}
		s.zmq.Store(zs)
		g.Go(func() error { return zs.Run(gctx) })
	}
	g.Go(func() error { return s.signalReady(gctx, natsUp) })

	log.Info("router listening", "url", s.URL(), "policy", s.cfg.Frontend.Router.Policy.String(),
		"index", indexLabel(s.cfg.Frontend.Router.Policy, fe.IndexKind()), "block_size", s.cfg.Frontend.Router.BlockSize,
		"tokenizer", s.cfg.Tokenizer, "static_workers", len(s.static), "nats", s.usesNATS(),
		"auth", len(s.cfg.Frontend.APIKeys) > 0)
	err := fe.Serve(feCtx, s.ln)
	stopBG()
	gerr := g.Wait()
	if c := s.Conn(); c != nil {
		c.Close()
	}
	if err == nil && ctx.Err() == nil {
		err = gerr
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// indexLabel names the index the router reads overlap from, for the
// start-up log: the event-fed index's kind (kind, flash or radix) under
// the kv policy, "approx" under the approx policy, "none" under the
// policies that read no index.
func indexLabel(p router.Policy, kind string) string {
	switch {
	case kind != "":
		return kind
	case p == router.PolicyApprox:
		return "approx"
	}
	return "none"
}

// startReplica builds the replica (and its load sync, when on) on conn
// and runs them in g (DESIGN.md §9).
func (s *Serve) startReplica(ctx context.Context, g *errgroup.Group, conn *eventplane.Conn) (*replica.Replica, error) {
	rc := s.cfg.Replica
	if rc.Model == "" {
		rc.Model = s.cfg.Frontend.Model
	}
	if s.fe.IndexKind() == "" {
		rc.SnapshotInterval = 0 // no event-fed index to snapshot (policy not kv)
	}
	rc.Logger = s.log.With("component", "replica")
	rc.Sync.Logger = rc.Logger
	opts := replica.RouterOptions(s.fe.Router())
	opts.Sink, opts.Flush = s.gate, s.fe.Flush              // events of unknown workers wait for their registration
	opts.SubscriberEvents.OnMessage = s.fe.ObservePublished // kvrouter_event_lag_seconds
	opts.SubscriberEvents.OnIngest = s.fe.CountIngest       // kvrouter_events_rejected_total, kvrouter_event_faults_total
	rep, err := replica.New(conn, rc, opts)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if s.cfg.ResetStates {
		if err := s.resetStates(ctx, conn, rep, rc.Model); err != nil {
			return nil, err
		}
	}
	var ls *replica.LoadSync
	if rc.Sync.Enabled {
		if ls, err = replica.NewLoadSync(conn.NC, rc.Sync, rep.ID()); err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
		if err := s.fe.Registry().Register(ls.PeerStore()); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("serve: replica peers metrics: %w", err)
			}
		}
		// The frontend is the target: a remote free lets queued requests
		// try again.
		g.Go(func() error { return ls.Run(ctx, s.fe) })
	}
	// kvrouter_replica_*: lease, snapshots written and skipped.
	if err := s.fe.Registry().Register(replica.NewCollector(rep)); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, fmt.Errorf("serve: replica metrics: %w", err)
		}
	}
	s.mu.Lock()
	s.conn, s.rep = conn, rep
	s.mu.Unlock()
	s.loadSync.Store(ls)
	g.Go(func() error { return rep.Run(ctx) })
	s.log.Info("replica started", "replica", rep.ID(), "snapshot_interval", rc.SnapshotInterval,
		"sync", rc.Sync.Enabled, "lease_ttl", rc.LeaseTTL)
	return rep, nil
}

// runNATS connects to NATS, retrying until it answers (or ctx is done),
// then runs the replica and the registry watch in g and closes up.
func (s *Serve) runNATS(ctx context.Context, g *errgroup.Group, up chan<- struct{}) error {
	log := s.log
	nc := s.cfg.NATS
	nc.Logger = log.With("component", "nats")
	conn, err := eventplane.ConnectRetry(ctx, nc, func(attempt int, err error) {
		s.setNATSWait(fmt.Sprintf("connecting to NATS %s: attempt %d: %v", s.natsTarget(), attempt, err))
		if attempt == 1 || attempt%10 == 0 {
			log.Warn("NATS not reachable yet; retrying", "nats", s.natsTarget(), "attempt", attempt, "err", err)
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("serve: %w", err)
	}
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	s.setNATSWait("")
	if s.cfg.NATS.URL == "" {
		log.Info("embedded NATS started; point workers at it", "nats", conn.ClientURL())
	} else {
		log.Info("connected to NATS", "nats", conn.ClientURL())
	}
	if _, err := s.startReplica(ctx, g, conn); err != nil {
		return err
	}
	reg := discovery.NewRegistry(conn, discovery.RegistryConfig{Logger: log, OnSynced: s.gate.Synced})
	g.Go(func() error { return s.gate.Run(ctx) })
	// Joins and leaves go through the fleet first, then release what
	// waits for them (the fleet knows the worker by then).
	watched := joinKick{Membership: s.members, changed: s.pods.reset,
		kick: func(id uint64) { s.gate.Joined(id); s.kickZMQ() }}
	g.Go(func() error { return reg.Watch(ctx, watched) })
	close(up)
	return nil
}

func (s *Serve) setNATSWait(why string) { s.natsWait.Store(&why) }

// natsTarget names the NATS Run connects to, for logs and /readyz
// (without credentials in the URLs).
func (s *Serve) natsTarget() string {
	if s.cfg.NATS.URL == "" {
		return "(embedded)"
	}
	parts := strings.Split(s.cfg.NATS.URL, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = nil
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}

// signalReady closes Ready once, with NATS (natsUp non-nil), the
// connection is up, the replica caught up and the registry was read, and
// the index writers applied what the replica handed them.
func (s *Serve) signalReady(ctx context.Context, natsUp <-chan struct{}) error {
	if natsUp != nil {
		select {
		case <-natsUp:
		case <-ctx.Done():
			return nil
		}
		if rep := s.Replica(); rep != nil {
			select {
			case <-rep.Ready():
			case <-ctx.Done():
				return nil
			}
		}
		select {
		case <-s.gate.SyncedC():
		case <-ctx.Done():
			return nil
		}
	}
	if err := s.fe.Flush(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	close(s.ready)
	return nil
}
