package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/internal/app"
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
	// Prefill and Decode, when set, make the fleet disaggregated (DESIGN.md
	// §10): workers 1..Prefill register with role prefill, the next Decode
	// with role decode, and Workers becomes Prefill+Decode. Default 0, 0:
	// aggregated (every worker both).
	Prefill, Decode int
	// Engine is every worker's engine config (Worker is set per worker,
	// ids 1..N). Default mocker.DefaultConfig().
	Engine mocker.Config
	// SpeedupRatios, when set, gives worker i+1 the speedup ratio
	// SpeedupRatios[i] instead of Engine.SpeedupRatio (a mixed-speed
	// fleet); its length must equal Workers, or sets it when Workers is 0.
	// Default nil = every worker Engine.SpeedupRatio.
	SpeedupRatios []float64
	// Model is the served model name. Default app.DefaultModel.
	Model string
	// MaxLoRAs is every worker's LoRA adapter slots (mocker --max-loras):
	// > 0 serves other model names as adapters, loaded on first use.
	// Default 0: the base model only.
	MaxLoRAs int
	// Tokenizer is shared by the router and the workers. Default the
	// built-in tokenizer (tokenizer.Default).
	Tokenizer tokenizer.Tokenizer
	// Frontend configures the router frontend (app.ServeConfig.Frontend);
	// Tokenizer, Model and Router.BlockSize are filled from the fields
	// above. Default app.DefaultServeConfig().Frontend.
	Frontend frontend.Config
	// RouterAddr is the frontend's listen address. Default "127.0.0.1:0".
	RouterAddr string
	// Direct skips NATS: each worker's events go straight into the
	// router's index (through the same Apply the subscriber calls), and
	// the workers are the router's static workers. Default false.
	Direct bool
	// NATS configures the embedded server (default: a free port on
	// 127.0.0.1, temporary store).
	NATS eventplane.Config
	// Tiers are every worker's lower KV tiers, as sim --tiers
	// ("host=4x,disk=16x[,shared=N]"; tiers.go): a shared store is one
	// for the fleet. Default "" = G1 only.
	Tiers string
	// Logger; default slog.Default().
	Logger *slog.Logger
	// RunRouter, when set, runs the router runtime instead of s.Run (a
	// shell wrapping serve, such as the endpoint picker, which runs s
	// itself). Default nil = s.Run.
	RunRouter func(ctx context.Context, s *app.Serve) error
}

// Worker is one mocker worker.
type Worker struct {
	ID  uint64
	URL string

	ln     net.Listener
	mu     sync.Mutex
	srv    *mockerd.Server
	built  chan struct{} // closed once srv is set
	cancel context.CancelFunc
	done   chan struct{}
}

// Server is the worker's mockerd server (nil until Run built it; set
// before Ready is closed).
func (w *Worker) Server() *mockerd.Server {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.srv
}

// Fleet is a running deployment. Build with New, then Run.
type Fleet struct {
	cfg     Config
	log     *slog.Logger
	feLn    net.Listener
	workers []*Worker
	ready   chan struct{}

	mu    sync.Mutex
	serve *app.Serve       // set in Run
	conn  *eventplane.Conn // embedded NATS, set in Run
	tiers *tierSetup       // lower tiers (tiers.go), set in New
}

// New validates cfg and binds every listener (router and workers on
// 127.0.0.1). It starts nothing; on error it closes what it opened.
func New(cfg Config) (f *Fleet, err error) {
	if cfg.Prefill < 0 || cfg.Decode < 0 || (cfg.Prefill > 0) != (cfg.Decode > 0) {
		return nil, fmt.Errorf("fleet: disaggregated pools %d:%d need both sizes positive", cfg.Prefill, cfg.Decode)
	}
	if cfg.Prefill > 0 {
		cfg.Workers = cfg.Prefill + cfg.Decode
	}
	if cfg.Workers == 0 && len(cfg.SpeedupRatios) > 0 {
		cfg.Workers = len(cfg.SpeedupRatios)
	}
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	if err := checkSpeedupRatios(cfg.SpeedupRatios, cfg.Workers); err != nil {
		return nil, err
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("fleet: %d workers", cfg.Workers)
	}
	if _, err := mocker.ParseTierSizes(cfg.Tiers); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	if cfg.Engine.NumBlocks == 0 {
		cfg.Engine = mocker.DefaultConfig()
	}
	if cfg.Model == "" {
		cfg.Model = app.DefaultModel
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
		// Defaults under the few fields a caller sets on a zero Config.
		fc := app.DefaultServeConfig().Frontend
		fc.Router.Policy, fc.Seed, fc.APIKeys, fc.AdminKeys = cfg.Frontend.Router.Policy, cfg.Frontend.Seed, cfg.Frontend.APIKeys, cfg.Frontend.AdminKeys
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
	cfg.Frontend.Model = cfg.Model
	cfg.Frontend.Router.BlockSize = cfg.Engine.BlockSize

	f = &Fleet{cfg: cfg, log: cfg.Logger, ready: make(chan struct{})}
	f.setupTiers()
	defer func() {
		if err != nil {
			f.closeListeners()
		}
	}()
	if f.feLn, err = net.Listen("tcp", cfg.RouterAddr); err != nil {
		return nil, fmt.Errorf("fleet: router listen %s: %w", cfg.RouterAddr, err)
	}
	for i := range cfg.Workers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("fleet: worker listen: %w", err)
		}
		f.workers = append(f.workers, &Worker{ID: uint64(i + 1), URL: "http://" + ln.Addr().String(), ln: ln,
			built: make(chan struct{}), done: make(chan struct{})})
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

// Serve is the router's serve runtime (nil until Run built it; set before
// Ready is closed).
func (f *Fleet) Serve() *app.Serve {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.serve
}

// Frontend returns the router frontend (nil until Run built it).
func (f *Fleet) Frontend() *frontend.Server {
	if s := f.Serve(); s != nil {
		return s.Frontend()
	}
	return nil
}

// Workers returns the workers, ids 1..N.
func (f *Fleet) Workers() []*Worker { return f.workers }

// Ready is closed once the router's index caught up with the event stream
// and the frontend routes to every worker.
func (f *Fleet) Ready() <-chan struct{} { return f.ready }

// NATSURL is the embedded NATS server's client URL ("" in direct mode or
// before Run started it).
func (f *Fleet) NATSURL() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn == nil {
		return ""
	}
	return f.conn.ClientURL()
}

// KillWorker stops worker i (0-based) abruptly: its listener closes and
// in-flight requests are cut (no drain), as if the process died.
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

// Run starts NATS (unless Direct), the workers (app.Mocker) and the router
// (app.Serve), the same runtimes `kvrouter mocker` and `kvrouter serve`
// run, and runs until ctx is done; then the router drains, the workers
// stop, NATS stops, and Run returns.
func (f *Fleet) Run(ctx context.Context) error {
	natsURL := ""
	var conn *eventplane.Conn
	if !f.cfg.Direct {
		nc := f.cfg.NATS
		nc.Logger = f.log.With("component", "nats")
		var err error
		conn, err = eventplane.StartEmbedded(ctx, nc)
		if err != nil {
			f.closeListeners()
			return fmt.Errorf("fleet: %w", err)
		}
		defer conn.Close()
		f.mu.Lock()
		f.conn = conn
		f.mu.Unlock()
		natsURL = conn.ClientURL()
	}
	sc := app.DefaultServeConfig()
	sc.Frontend = f.cfg.Frontend
	// The mockers tokenize with the router's tokenizer: its ids may be
	// forwarded (each still passes the self-test first).
	sc.Frontend.OwnTokenizer = true
	sc.Listener, sc.Logger, sc.TokenizerImpl = f.feLn, f.log.With("component", "frontend"), f.cfg.Tokenizer
	sc.NATS.URL = natsURL
	if st := f.cfg.Engine.Tiers.Shared; st != nil {
		sc.SharedStores = []uint64{st.Worker().ID} // not a worker: no registration
	}
	mocks := make([]*app.Mocker, len(f.workers))
	for i, w := range f.workers {
		mc := app.DefaultMockerConfig()
		mc.Mocker.Engine, mc.Mocker.Model, mc.Mocker.MaxLoRAs = f.cfg.Engine, f.cfg.Model, f.cfg.MaxLoRAs
		if len(f.cfg.SpeedupRatios) > 0 {
			mc.Mocker.Engine.SpeedupRatio = f.cfg.SpeedupRatios[i]
		}
		mc.WorkerID, mc.Listener, mc.TokenizerImpl = w.ID, w.ln, f.cfg.Tokenizer
		mc.Role = f.role(i)
		mc.Logger = f.log.With("component", "mocker")
		mc.DrainTimeout = time.Millisecond // KillWorker cuts in-flight requests
		mc.NATS.URL = natsURL
		f.workerTiers(&mc.Mocker, conn)
		if f.cfg.Direct {
			// Into the router's index through the subscriber's entry point.
			mc.Mocker.Sinks = []mockerd.EventSink{mockerd.EventSinkFunc(func(_ context.Context, ev kvevents.Event) error {
				return f.Frontend().Apply(&ev)
			})}
		}
		m, err := app.NewMocker(mc)
		if err != nil {
			f.closeListeners()
			return fmt.Errorf("fleet: %w", err)
		}
		mocks[i] = m
		if f.cfg.Direct {
			sc.StaticWorkers = append(sc.StaticWorkers, m.Worker())
		}
	}
	s, err := app.NewServe(sc)
	if err != nil {
		f.closeListeners()
		return fmt.Errorf("fleet: %w", err)
	}
	f.mu.Lock()
	f.serve = s
	f.mu.Unlock()

	// Workers outlive the router's drain (it proxies to them).
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	errc := make(chan error, len(f.workers)+1)
	var wg sync.WaitGroup
	if pub := f.tiers.pub; pub != nil {
		// The G4 store's publisher outlives the workers that feed it.
		pctx, stopPub := context.WithCancel(context.WithoutCancel(ctx))
		pubDone := make(chan struct{})
		go func() { defer close(pubDone); _ = pub.Run(pctx) }()
		defer func() { stopPub(); <-pubDone }()
	}
	for i, w := range f.workers {
		wctx, cancel := context.WithCancel(bg)
		w.mu.Lock()
		w.cancel = cancel
		w.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(w.done)
			err := mocks[i].RunWith(wctx, func(srv *mockerd.Server) {
				w.mu.Lock()
				w.srv = srv
				w.mu.Unlock()
				close(w.built)
			})
			if err != nil && wctx.Err() == nil {
				errc <- fmt.Errorf("fleet: worker %d: %w", w.ID, err)
			}
		}()
	}
	feCtx, stopFE := context.WithCancel(ctx)
	defer stopFE()
	feDone := make(chan error, 1)
	runRouter := f.cfg.RunRouter
	if runRouter == nil {
		runRouter = func(ctx context.Context, s *app.Serve) error { return s.Run(ctx) }
	}
	go func() { feDone <- runRouter(feCtx, s) }()
	wg.Add(1)
	go func() { defer wg.Done(); f.waitReady(bg, s) }()

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	case runErr = <-feDone:
		feDone <- runErr
	}
	stopFE()
	if e := <-feDone; e != nil && runErr == nil {
		runErr = fmt.Errorf("fleet: router: %w", e)
	}
	stopBG()
	wg.Wait()
	return runErr
}

// waitReady closes Ready once every worker's server is built, the
// router's index caught up, and the frontend knows every worker.
func (f *Fleet) waitReady(ctx context.Context, s *app.Serve) {
	for _, w := range f.workers {
		select {
		case <-w.built:
		case <-ctx.Done():
			return
		}
	}
	select {
	case <-s.Ready():
	case <-ctx.Done():
		return
	}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if len(s.Frontend().Workers()) >= len(f.workers) {
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

// role is worker i's (0-based) disaggregation role ("" = both).
func (f *Fleet) role(i int) string {
	switch {
	case f.cfg.Prefill == 0:
		return ""
	case i < f.cfg.Prefill:
		return router.RolePrefill.String()
	}
	return router.RoleDecode.String()
}

// Pools returns the prefill and decode pool sizes (0, 0: aggregated).
func (f *Fleet) Pools() (prefill, decode int) { return f.cfg.Prefill, f.cfg.Decode }

// Info returns the router.WorkerInfo-style description of a worker (for
// logs); zero before Run built the worker.
func (w *Worker) Info() router.WorkerInfo {
	srv := w.Server()
	if srv == nil {
		return router.WorkerInfo{ID: w.ID}
	}
	c := srv.Config().Engine
	return router.WorkerInfo{ID: w.ID, TotalKVBlocks: c.NumBlocks, MaxNumBatchedTokens: c.MaxNumBatchedTokens, MaxNumSeqs: c.MaxNumSeqs,
		BlockSize: c.BlockSize}
}
