package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/internal/mockerd"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// Config configures a fleet.
type Config struct {
	// Workers is the number of mocker workers. Default 4.
	Workers int
	// Engine is every worker's engine config (Worker is set per worker,
	// ids 1..N). Default mocker.DefaultConfig().
	Engine mocker.Config
	// Model is the served model name. Default "kvrouter-mock".
	Model string
	// Tokenizer is shared by the router and the workers. Default the
	// built-in tokenizer (tokenizer.Default).
	Tokenizer tokenizer.Tokenizer
	// Frontend configures the router frontend; Tokenizer, Model and
	// Router.BlockSize are filled from the fields above. Default
	// frontend.DefaultConfig().
	Frontend frontend.Config
	// RouterAddr is the frontend's listen address. Default "127.0.0.1:0".
	RouterAddr string
	// Direct skips NATS: events go straight into the router and workers
	// are added without registration. Default false.
	Direct bool
	// NATS configures the event plane (embedded server by default).
	NATS eventplane.Config
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Worker is one running mocker worker.
type Worker struct {
	ID     uint64
	URL    string
	Server *mockerd.Server

	ln     net.Listener
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Fleet is a running deployment. Build with New, then Run.
type Fleet struct {
	cfg     Config
	log     *slog.Logger
	fe      *frontend.Server
	feLn    net.Listener
	workers []*Worker
	ready   chan struct{}
	connMu  sync.Mutex
	conn    *eventplane.Conn      // set in Run (NATS mode)
	pub     *eventplane.Publisher // set in Run (NATS mode)
}

// New validates cfg, binds every listener and builds the servers. It starts
// no goroutine; on error it closes what it opened.
func New(cfg Config) (f *Fleet, err error) {
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("fleet: %d workers", cfg.Workers)
	}
	if cfg.Engine.NumBlocks == 0 {
		cfg.Engine = mocker.DefaultConfig()
	}
	if cfg.Model == "" {
		cfg.Model = "kvrouter-mock"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Tokenizer == nil {
		tok, err := tokenizer.Default(tokenizer.Options{})
		if err != nil {
			return nil, fmt.Errorf("fleet: built-in tokenizer: %w", err)
		}
		cfg.Tokenizer = tok
	}
	if cfg.Frontend.Router.BlockSize == 0 {
		fc := frontend.DefaultConfig()
		fc.Router.Mode, fc.Seed, fc.APIKeys, fc.AdminKeys = cfg.Frontend.Router.Mode, cfg.Frontend.Seed, cfg.Frontend.APIKeys, cfg.Frontend.AdminKeys
		fc.Events, fc.MaxPromptTokens, fc.Registry = cfg.Frontend.Events, cfg.Frontend.MaxPromptTokens, cfg.Frontend.Registry
		if cfg.Frontend.LoadPollInterval != 0 {
			fc.LoadPollInterval = cfg.Frontend.LoadPollInterval
		}
		if cfg.Frontend.DrainTimeout != 0 {
			fc.DrainTimeout = cfg.Frontend.DrainTimeout
		}
		cfg.Frontend = fc
	}
	if cfg.RouterAddr == "" {
		cfg.RouterAddr = "127.0.0.1:0"
	}
	cfg.Frontend.Tokenizer = cfg.Tokenizer
	cfg.Frontend.Model = cfg.Model
	cfg.Frontend.Router.BlockSize = cfg.Engine.BlockSize
	cfg.Frontend.Logger = cfg.Logger.With("component", "frontend")

	f = &Fleet{cfg: cfg, log: cfg.Logger, ready: make(chan struct{})}
	defer func() {
		if err != nil {
			f.closeListeners()
		}
	}()
	if f.fe, err = frontend.New(cfg.Frontend); err != nil {
		return nil, err
	}
	if f.feLn, err = net.Listen("tcp", cfg.RouterAddr); err != nil {
		return nil, fmt.Errorf("fleet: router listen %s: %w", cfg.RouterAddr, err)
	}
	for i := range cfg.Workers {
		id := uint64(i + 1)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("fleet: worker listen: %w", err)
		}
		w := &Worker{ID: id, URL: "http://" + ln.Addr().String(), ln: ln, done: make(chan struct{})}
		f.workers = append(f.workers, w)
		ec := cfg.Engine
		ec.Worker = kvevents.Worker{ID: id}
		mc := mockerd.Config{Engine: ec, Model: cfg.Model, Tokenizer: cfg.Tokenizer,
			Logger: cfg.Logger.With("component", "mocker")}
		if cfg.Direct {
			mc.Sinks = []mockerd.EventSink{mockerd.EventSinkFunc(func(_ context.Context, ev kvevents.Event) error {
				return f.fe.Apply(&ev)
			})}
		} else {
			mc.Sinks = []mockerd.EventSink{mockerd.EventSinkFunc(f.publish)}
		}
		if w.Server, err = mockerd.New(mc); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *Fleet) closeListeners() {
	if f.feLn != nil {
		_ = f.feLn.Close()
	}
	for _, w := range f.workers {
		_ = w.ln.Close()
	}
}

// URL is the router frontend's base URL, e.g. "http://127.0.0.1:8080".
func (f *Fleet) URL() string { return "http://" + f.feLn.Addr().String() }

// Frontend returns the router frontend.
func (f *Fleet) Frontend() *frontend.Server { return f.fe }

// Workers returns the workers, ids 1..N.
func (f *Fleet) Workers() []*Worker { return f.workers }

// Ready is closed once the frontend routes to every worker.
func (f *Fleet) Ready() <-chan struct{} { return f.ready }

// NATSURL is the embedded NATS server's client URL ("" in direct mode or
// before Run connected).
func (f *Fleet) NATSURL() string {
	f.connMu.Lock()
	defer f.connMu.Unlock()
	if f.conn == nil {
		return ""
	}
	return f.conn.ClientURL()
}

// publisher is set in Run; workers call publish from their loops.
var errNoPublisher = errors.New("fleet: event publisher not running")

func (f *Fleet) publish(ctx context.Context, ev kvevents.Event) error {
	f.connMu.Lock()
	p := f.pub
	f.connMu.Unlock()
	if p == nil {
		return errNoPublisher
	}
	return p.Publish(ctx, ev)
}

// KillWorker stops worker i (0-based) abruptly: its listener closes and
// in-flight requests are cut, as if the process died. Its registry entry is
// left to expire, as a dead process's would.
func (f *Fleet) KillWorker(i int) {
	w := f.workers[i]
	w.mu.Lock()
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-w.done
	}
}

// Run starts NATS (unless Direct), the workers and the frontend, and runs
// until ctx is done; then it drains the frontend, stops the workers and
// NATS, and returns.
func (f *Fleet) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errc := make(chan error, 8+len(f.workers))
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	goRun := func(name string, fn func(context.Context) error, c context.Context) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(c); err != nil && c.Err() == nil {
				errc <- fmt.Errorf("fleet: %s: %w", name, err)
			}
		}()
	}
	var reg *discovery.Registry
	var sub *eventplane.Subscriber
	goRun("index", f.fe.RunIndex, bg)
	if !f.cfg.Direct {
		nc := f.cfg.NATS
		nc.Logger = f.log.With("component", "nats")
		conn, err := eventplane.StartEmbedded(ctx, nc)
		if err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
		defer conn.Close()
		pub := eventplane.NewPublisher(conn, eventplane.PublisherConfig{Model: f.cfg.Model, Logger: f.log})
		f.connMu.Lock()
		f.conn, f.pub = conn, pub
		f.connMu.Unlock()
		goRun("publisher", pub.Run, bg)
		scfg := eventplane.SubscriberConfig{Model: f.cfg.Model, Logger: f.log}
		scfg.Events.OnMessage = f.fe.ObservePublished
		sub = eventplane.NewSubscriber(conn, f.fe, scfg)
		goRun("subscriber", sub.Run, bg)
		reg = discovery.NewRegistry(conn, discovery.RegistryConfig{Logger: f.log})
		membership := discovery.NewFleet(f.cfg.Engine.BlockSize, f.fe, f.log)
		goRun("discovery", func(c context.Context) error { return reg.Watch(c, membership) }, bg)
	}
	for _, w := range f.workers {
		wctx, cancel := context.WithCancel(bg)
		w.mu.Lock()
		w.cancel = cancel
		w.mu.Unlock()
		wg.Add(1)
		go func(w *Worker) {
			defer wg.Done()
			defer close(w.done)
			if err := w.Server.Serve(wctx, w.ln, time.Millisecond); err != nil && wctx.Err() == nil {
				errc <- fmt.Errorf("fleet: worker %d: %w", w.ID, err)
			}
		}(w)
		info := w.Server.Config()
		dw := discovery.Worker{ID: w.ID, Model: f.cfg.Model, URL: w.URL, BlockSize: info.Engine.BlockSize,
			TotalKVBlocks: info.Engine.NumBlocks, MaxBatchedTokens: info.Engine.MaxNumBatchedTokens, DPSize: 1}
		if reg != nil {
			goRun("keepalive", func(c context.Context) error { return reg.Keepalive(c, dw) }, wctx)
		} else if err := f.fe.Join(dw); err != nil {
			return err
		}
	}
	feCtx, stopFE := context.WithCancel(context.WithoutCancel(ctx))
	defer stopFE()
	feDone := make(chan error, 1)
	go func() { feDone <- f.fe.Serve(feCtx, f.feLn) }()
	go f.waitReady(bg, sub)

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	case err = <-feDone:
		feDone <- err
	}
	stopFE()
	if e := <-feDone; e != nil && err == nil {
		err = e
	}
	stopBG()
	wg.Wait()
	return err
}

// waitReady closes Ready once every worker is in the frontend (and the
// event subscriber caught up).
func (f *Fleet) waitReady(ctx context.Context, sub *eventplane.Subscriber) {
	if sub != nil {
		select {
		case <-sub.Ready():
		case <-ctx.Done():
			return
		}
	}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if len(f.fe.Workers()) >= len(f.workers) {
			if f.fe.Flush(ctx) != nil {
				return
			}
			close(f.ready)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Info returns the router.WorkerInfo-style description of a worker (for
// logs).
func (w *Worker) Info() router.WorkerInfo {
	c := w.Server.Config().Engine
	return router.WorkerInfo{ID: w.ID, TotalKVBlocks: c.NumBlocks, MaxNumBatchedTokens: c.MaxNumBatchedTokens, BlockSize: c.BlockSize}
}
