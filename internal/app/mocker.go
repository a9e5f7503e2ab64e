package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/mockerd"
	"github.com/kvrouter/kvrouter/kvevents"
	"golang.org/x/sync/errgroup"
)

// RunMocker runs `kvrouter mocker` until ctx is done: NewMocker, then Run.
func RunMocker(ctx context.Context, cfg MockerConfig) error {
	m, err := NewMocker(cfg)
	if err != nil {
		return err
	}
	return m.Run(ctx)
}

// Mocker is the mocker runtime: one simulated worker behind its HTTP
// listener, and, while Run runs, its event publishing and registration.
// Build with NewMocker (binds the listener, starts nothing), then Run.
type Mocker struct {
	cfg MockerConfig
	log *slog.Logger
	ln  net.Listener
	url string
	mc  mockerd.Config
	// epoch is this process start's id in the registration (DESIGN.md
	// §9): routers drop what they remember of a worker whose epoch changed.
	epoch string
}

// NewMocker validates cfg, loads the tokenizer and binds the listener.
func NewMocker(cfg MockerConfig) (*Mocker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log, err := loggerOr(cfg.Logger, cfg.LogLevel)
	if err != nil {
		return nil, err
	}
	m := &Mocker{cfg: cfg, log: log, ln: cfg.Listener, epoch: newEpoch()}
	if m.ln == nil {
		if m.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, fmt.Errorf("mocker: %w", err)
		}
	}
	if m.url = cfg.AdvertiseURL; m.url == "" {
		m.url = "http://" + m.ln.Addr().String()
	}
	m.mc = cfg.Mocker
	m.mc.Logger = log
	m.mc.Engine.Worker = kvevents.Worker{ID: cfg.WorkerID}
	m.mc.AdvertiseURL = m.url
	engineTiers(&m.mc.Engine, cfg.Tiers)
	if m.mc.Tokenizer = cfg.TokenizerImpl; m.mc.Tokenizer == nil {
		// "" stays the built-in one: the mocker is the engine, whose
		// tokenizer is what it says, never another worker's.
		tok, err := LoadTokenizer(cmp.Or(cfg.Tokenizer, TokenizerBuiltin), m.mc.Model, []string{m.url})
		if err != nil {
			_ = m.ln.Close()
			return nil, err
		}
		m.mc.Tokenizer = tok
	}
	return m, nil
}

// URL is the worker's advertised base URL.
func (m *Mocker) URL() string { return m.url }

// Config is the configuration m was built with.
func (m *Mocker) Config() MockerConfig { return m.cfg }

// Worker is the worker as routers discover it.
func (m *Mocker) Worker() discovery.Worker {
	e := m.mc.Engine
	return discovery.Worker{ID: m.cfg.WorkerID, Model: m.mc.Model, URL: m.url, BlockSize: e.BlockSize,
		TotalKVBlocks: e.NumBlocks, MaxBatchedTokens: e.MaxNumBatchedTokens, MaxNumSeqs: e.MaxNumSeqs, DPSize: 1,
		EventEndpoint: m.cfg.ZMQPub, ReplayEndpoint: m.cfg.ZMQReplay, Epoch: m.epoch, Role: m.cfg.Role,
		MaxLoRAs: m.mc.MaxLoRAs}
}

// Run serves until ctx is done, then drains (up to DrainTimeout),
// deregisters and returns. With NATS.URL set it publishes the engine's KV
// events to the stream (continuing the event ids of a previous life) and
// keeps its registration alive.
func (m *Mocker) Run(ctx context.Context) error {
	return m.run(ctx, nil)
}

// RunWith is Run, handing the mockerd server to onServer before serving
// (internal/fleet reads its stats).
func (m *Mocker) RunWith(ctx context.Context, onServer func(*mockerd.Server)) error {
	return m.run(ctx, onServer)
}

func (m *Mocker) run(ctx context.Context, onServer func(*mockerd.Server)) error {
	cfg, log, mc := m.cfg, m.log, m.mc
	logConfig(log, "effective config", cfg.Redacted())
	g, gctx := errgroup.WithContext(ctx)
	var reg *discovery.Registry
	if cfg.NATS.URL != "" {
		nc := cfg.NATS
		nc.Logger = log.With("component", "nats")
		// NATS may come up after the worker: wait for it.
		conn, err := eventplane.ConnectRetry(ctx, nc, func(attempt int, err error) {
			if attempt == 1 || attempt%10 == 0 {
				log.Warn("NATS not reachable yet; retrying", "attempt", attempt, "err", err)
			}
		})
		if err != nil {
			_ = m.ln.Close()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("mocker: %w", err)
		}
		defer conn.Close()
		// AssignIDs + Resume: a restarted mocker continues the event ids
		// of its previous life, so routers do not drop its new events as
		// duplicates.
		pub := eventplane.NewPublisher(conn, eventplane.PublisherConfig{Model: mc.Model, Logger: log, AssignIDs: true})
		if err := pub.Resume(ctx, cfg.WorkerID); err != nil {
			_ = m.ln.Close()
			return fmt.Errorf("mocker: %w", err)
		}
		mc.Sinks = append(mc.Sinks[:len(mc.Sinks):len(mc.Sinks)], pub)
		g.Go(func() error { return pub.Run(gctx) })
		if !cfg.NoRegister {
			reg = discovery.NewRegistry(conn, discovery.RegistryConfig{Logger: log})
		}
	}
	if cfg.ZMQPub != "" {
		zp, err := mockerd.NewZMQPublisher(ctx, cfg.ZMQPub, cfg.ZMQReplay, mc.Engine.BlockSize, log)
		if err != nil {
			_ = m.ln.Close()
			return fmt.Errorf("mocker: %w", err)
		}
		defer zp.Close()
		mc.ZMQ = zp
	}
	srv, err := mockerd.New(mc)
	if err != nil {
		_ = m.ln.Close()
		return err
	}
	if onServer != nil {
		onServer(srv)
	}
	if reg != nil {
		// Keepalive claims the id only while no other live instance holds
		// it (a plain Register would overwrite a duplicate's holder). An
		// event published before the registration is read is held by the
		// routers and applied when it arrives (app's member gate).
		w := m.Worker()
		g.Go(func() error { return reg.Keepalive(gctx, w) })
	}
	log.Info("mocker listening", "url", m.url, "worker", cfg.WorkerID, "model", mc.Model,
		"block_size", mc.Engine.BlockSize, "num_blocks", mc.Engine.NumBlocks,
		"speedup_ratio", mc.Engine.SpeedupRatio, "tokenizer", mc.Tokenizer.Name(), "nats", cfg.NATS.URL != "")
	g.Go(func() error { return srv.Serve(gctx, m.ln, cfg.DrainTimeout) })
	if err := g.Wait(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// newEpoch is a random process-start id (16 hex digits).
func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}
