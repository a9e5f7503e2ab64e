package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/internal/frontend"
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
	conn *eventplane.Conn       // set in Run (NATS on)
	sub  *eventplane.Subscriber // set in Run (NATS on)
}

// NewServe validates cfg, loads the tokenizer, builds the frontend and
// binds the listener. It starts no goroutine; on error it closes what it
// opened.
func NewServe(cfg ServeConfig) (*Serve, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		var err error
		if log, err = NewLogger(cfg.LogLevel); err != nil {
			return nil, err
		}
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
	static, err := discovery.NumberWorkers(static)
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
		if fc.Tokenizer, err = LoadTokenizer(cfg.Tokenizer, fc.Model, urls); err != nil {
			return nil, err
		}
	}
	s := &Serve{cfg: cfg, log: log, static: static, ready: make(chan struct{})}
	onDown := fc.Events.OnWorkerDown
	fc.Events.OnWorkerDown = func(id uint64) {
		if sub := s.Subscriber(); sub != nil {
			sub.Forget(id) // its next life may restart event ids
		}
		if onDown != nil {
			onDown(id)
		}
	}
	if s.fe, err = frontend.New(fc); err != nil {
		return nil, err
	}
	s.members = discovery.NewFleet(fc.Router.BlockSize, s.fe, log)
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
// up: the subscriber applied the stream up to where it stood at start
// (NATS), and the index writers flushed it.
func (s *Serve) Ready() <-chan struct{} { return s.ready }

// Conn is the NATS connection (nil before Run connected, or without NATS).
func (s *Serve) Conn() *eventplane.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// Subscriber is the KV event stream's subscriber (nil before Run started
// it, or without NATS).
func (s *Serve) Subscriber() *eventplane.Subscriber {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sub
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
	var conn *eventplane.Conn
	if s.usesNATS() {
		nc := s.cfg.NATS
		nc.Logger = log.With("component", "nats")
		var err error
		if conn, err = eventplane.Connect(ctx, nc); err != nil {
			_ = s.ln.Close()
			return fmt.Errorf("serve: %w", err)
		}
		defer conn.Close()
	}
	g.Go(func() error { return fe.RunIndex(gctx) })

	var sub *eventplane.Subscriber
	if conn != nil {
		if s.cfg.NATS.URL == "" {
			log.Info("embedded NATS started; point workers at it", "nats", conn.ClientURL())
		}
		scfg := eventplane.SubscriberConfig{Model: s.cfg.Frontend.Model, Logger: log}
		scfg.Events.OnMessage = fe.ObservePublished // kvrouter_event_lag_seconds
		sub = eventplane.NewSubscriber(conn, fe, scfg)
		s.mu.Lock()
		s.conn, s.sub = conn, sub
		s.mu.Unlock()
		g.Go(func() error { return sub.Run(gctx) })
		reg := discovery.NewRegistry(conn, discovery.RegistryConfig{Logger: log})
		g.Go(func() error { return reg.Watch(gctx, s.members) })
	}
	var sources []zmqsub.Source
	for _, w := range s.static {
		if w.EventEndpoint != "" {
			sources = append(sources, zmqsub.Source{WorkerID: w.ID, Endpoint: w.EventEndpoint,
				Replay: w.ReplayEndpoint, DPSize: max(w.DPSize, 1)})
		}
	}
	if len(sources) > 0 {
		zs := zmqsub.New(zmqsub.Config{BlockSize: s.cfg.Frontend.Router.BlockSize, Sources: sources, Logger: log,
			OnBatch: fe.ObservePublished}, fe)
		g.Go(func() error { return zs.Run(gctx) })
	}
	g.Go(func() error { return s.signalReady(gctx, sub) })

	log.Info("router listening", "url", s.URL(), "policy", s.cfg.Frontend.Router.Policy.String(),
		"index", fe.IndexKind(), "block_size", s.cfg.Frontend.Router.BlockSize,
		"tokenizer", s.cfg.Tokenizer, "static_workers", len(s.static), "nats", s.usesNATS(),
		"auth", len(s.cfg.Frontend.APIKeys) > 0)
	err := fe.Serve(feCtx, s.ln)
	stopBG()
	if gerr := g.Wait(); err == nil && ctx.Err() == nil {
		err = gerr
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// signalReady closes Ready once the subscriber (if any) caught up and the
// index writers applied what it handed them.
func (s *Serve) signalReady(ctx context.Context, sub *eventplane.Subscriber) error {
	if sub != nil {
		select {
		case <-sub.Ready():
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
