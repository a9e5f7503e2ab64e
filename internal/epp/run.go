package epp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/k8s"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"k8s.io/client-go/kubernetes"
)

// Health services of the endpoint picker protocol (besides "" for the
// whole server).
const (
	HealthLiveness  = "liveness"
	HealthReadiness = "readiness"
)

// Config is the whole configuration of kvrouter-epp: the serve runtime
// it wraps (router core, tokenizer, static workers, NATS and ZMQ events,
// the HTTP side with /metrics, /readyz and /debug), the gRPC listener,
// the ext_proc protocol and the InferencePool's pod discovery.
type Config struct {
	// Serve is serve's configuration (its fields sit at the top level of
	// the YAML form); Serve.Listen is the HTTP side. Default
	// app.DefaultServeConfig() with Listen "0.0.0.0:9090".
	Serve app.ServeConfig `yaml:",inline"`
	// GRPCAddr is the ext_proc (and gRPC health) listen address. Default
	// "0.0.0.0:9002" (the inference extension's EPP port).
	GRPCAddr string `yaml:"grpc_addr"`
	// Protocol is the ext_proc side. Default DefaultProtocolConfig().
	Protocol ProtocolConfig `yaml:"epp"`
	// Pool discovers the workers as the ready pods of an InferencePool
	// (client-go informers). Default off (Pool.Selector empty).
	Pool k8s.PoolConfig `yaml:"pool"`
	// HealthInterval is how often the gRPC health status is recomputed.
	// Default 1s; 0 = default.
	HealthInterval time.Duration `yaml:"health_interval"`

	// GRPCListener, when set, is served instead of listening on GRPCAddr
	// (tests).
	GRPCListener net.Listener `yaml:"-"`
	// KubeClient, when set, is the pool's Kubernetes client instead of
	// one built from Pool.Kubeconfig or the in-cluster config (tests).
	KubeClient kubernetes.Interface `yaml:"-"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	sc := app.DefaultServeConfig()
	sc.Listen = "0.0.0.0:9090"
	return Config{Serve: sc, GRPCAddr: "0.0.0.0:9002", Protocol: DefaultProtocolConfig(),
		Pool: k8s.DefaultPoolConfig(), HealthInterval: time.Second}
}

// Validate reports every problem, joined.
func (c Config) Validate() error {
	var errs []error
	if c.GRPCAddr == "" && c.GRPCListener == nil {
		errs = append(errs, errors.New("epp: a gRPC listen address is required"))
	}
	if c.HealthInterval < 0 {
		errs = append(errs, fmt.Errorf("epp: health interval %v < 0", c.HealthInterval))
	}
	for _, err := range []error{c.Serve.Validate(), c.Protocol.Validate(), c.Pool.Validate()} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run runs kvrouter-epp until ctx is done: the serve runtime built from
// cfg.Serve, the pod discovery when cfg.Pool is on, and the gRPC server.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	sc := cfg.Serve
	var pool *k8s.Pool
	if cfg.Pool.Enabled() {
		// The pool is the membership: no embedded NATS for workers that
		// would register there.
		if sc.NATS.URL == "" {
			sc.NoNATS = true
		}
		// Pods may be dialled (connect topology): a ZMQ port, or a pod's
		// endpoint annotation.
		sc.ZMQDynamic = true
		var err error
		if pool, err = k8s.NewPool(cfg.Pool, cfg.KubeClient); err != nil {
			return err
		}
	}
	s, err := app.NewServe(sc)
	if err != nil {
		return err
	}
	return RunWith(ctx, s, cfg, pool)
}

// RunWith runs the endpoint picker over an already built serve runtime s
// (which it runs too) until ctx is done: the gRPC server (ext_proc and
// health) and, when pool is not nil, the pod discovery feeding
// s.Members(). internal/fleet's tests start mocker fleets this way.
func RunWith(ctx context.Context, s *app.Serve, cfg Config, pool *k8s.Pool) error {
	pc := cfg.Protocol
	if pc.Logger == nil {
		pc.Logger = cfg.Serve.Logger
	}
	if pc.Logger == nil {
		pc.Logger = s.Frontend().Logger()
	}
	log := pc.Logger
	srv, err := New(pc, s.Frontend())
	if err != nil {
		return err
	}
	ln := cfg.GRPCListener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.GRPCAddr); err != nil {
			return fmt.Errorf("epp: %w", err)
		}
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(maxRecvMsg(s.Frontend().MaxBodyBytes())))
	extprocv3.RegisterExternalProcessorServer(gs, srv)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	hs.SetServingStatus(HealthLiveness, healthpb.HealthCheckResponse_SERVING)
	setReady(hs, false)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.Run(gctx) })
	if pool != nil {
		g.Go(func() error {
			if s.Config().ZMQDynamic {
				// The subscriber exists once serve is ready; the pool
				// dials its pods through it.
				select {
				case <-s.Ready():
				case <-gctx.Done():
					return nil
				}
				if z := s.ZMQ(); z != nil {
					pool.SetSources(z)
				}
			}
			return pool.Run(gctx, s.Members())
		})
	}
	g.Go(func() error {
		iv := cmpDur(cfg.HealthInterval, time.Second)
		t := time.NewTicker(iv)
		defer t.Stop()
		ready := false
		for {
			now := isReady(s, pool)
			if now != ready {
				ready = now
				setReady(hs, ready)
				log.Info("epp readiness", "ready", ready, "workers", len(s.Frontend().Workers()))
			}
			select {
			case <-gctx.Done():
				return nil
			case <-t.C:
			}
		}
	})
	g.Go(func() error {
		<-gctx.Done()
		hs.Shutdown() // NOT_SERVING: the proxy stops sending new streams
		done := make(chan struct{})
		go func() { gs.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(s.Config().Frontend.DrainTimeout):
			gs.Stop()
			<-done
		}
		return nil
	})
	log.Info("endpoint picker listening", "grpc", ln.Addr().String(), "http", s.URL(),
		"request_body_mode", pc.RequestBodyMode.String(), "pool", cfg.Pool.Enabled())
	g.Go(func() error {
		if err := gs.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			return fmt.Errorf("epp: grpc: %w", err)
		}
		return nil
	})
	err = g.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// maxRecvMsg bounds one ext_proc message the gRPC server decodes: a
// BUFFERED body arrives whole in one message, so a body up to serve's
// --max-body-bytes must fit (with room for headers and metadata), and
// gRPC's default of 4 MiB stays the floor.
func maxRecvMsg(maxBody int64) int {
	const slack, floor = 1 << 20, 4 << 20
	return int(max(min(maxBody, 1<<40)+slack, floor))
}

func isReady(s *app.Serve, pool *k8s.Pool) bool {
	select {
	case <-s.Ready():
	default:
		return false
	}
	if pool != nil && !pool.Synced() {
		return false
	}
	return len(s.Frontend().Workers()) > 0
}

func setReady(hs *health.Server, ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	for _, svc := range []string{"", HealthReadiness, extprocv3.ExternalProcessor_ServiceDesc.ServiceName} {
		hs.SetServingStatus(svc, st)
	}
}

func cmpDur(a, b time.Duration) time.Duration {
	if a > 0 {
		return a
	}
	return b
}
