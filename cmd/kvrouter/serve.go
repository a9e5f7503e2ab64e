package main

import (
	"net"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/queue"
	"github.com/kvrouter/kvrouter/router"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
)

func newServeCmd() *cobra.Command {
	cfg := frontend.DefaultConfig()
	var (
		addr, tok, policy, natsURL, workersFile, logLevel string
		workerFlags, tokURLs                              []string
		noNATS, affinity                                  bool
		natsPort                                          int
		queuePolicy, preset                               string
	)
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the KV-aware router frontend (OpenAI API) in front of a fleet of workers",
		Long: `Tokenizes each request with the model's tokenizer, routes it to the worker holding
the longest cached prefix (minus its load), forwards it and streams the answer back.

Workers come from the NATS KV registry (workers started with 'kvrouter mocker --nats URL'
or any engine that registers) and/or a static list (--worker, --workers-file). KV events
come from the JetStream stream, or from each static worker's vLLM ZMQ endpoint (zmq=...).
With neither --nats nor --worker an embedded NATS server is started.`,
		Example: `  kvrouter serve --nats nats://127.0.0.1:4222 --tokenizer ./Qwen3-8B/
  kvrouter serve --worker http://10.0.0.5:8000,id=1,zmq=tcp://10.0.0.5:5557,replay=tcp://10.0.0.5:5558,bs=16 --block-size 16`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if cfg.Policy, err = frontend.ParsePolicy(policy); err != nil {
				return err
			}
			if err := applyRouterPreset(cmd, &cfg.Router, preset); err != nil {
				return err
			}
			cfg.Router.Affinity.Enabled = affinity
			if queuePolicy != "" {
				if cfg.Router.Queue.Policy, err = queue.ParsePolicy(queuePolicy); err != nil {
					return err
				}
			}
			var static []discovery.Worker
			for _, s := range workerFlags {
				w, err := discovery.ParseWorkerFlag(s)
				if err != nil {
					return err
				}
				static = append(static, w)
			}
			if workersFile != "" {
				ws, err := discovery.LoadStatic(workersFile)
				if err != nil {
					return err
				}
				static = append(static, ws...)
			}
			if static, err = discovery.NumberWorkers(static); err != nil {
				return err
			}
			if len(tokURLs) == 0 {
				for _, w := range static {
					tokURLs = append(tokURLs, w.URL)
				}
			}
			if cfg.Tokenizer, err = loadTokenizer(tok, cfg.Model, tokURLs); err != nil {
				return err
			}
			cfg.Logger = log
			var sub *eventplane.Subscriber
			cfg.Events.OnWorkerDown = func(id uint64) {
				if sub != nil {
					sub.Forget(id) // its next life may restart event ids
				}
			}
			fe, err := frontend.New(cfg)
			if err != nil {
				return err
			}
			members := discovery.NewFleet(cfg.Router.BlockSize, fe, log)
			if err := members.AddStatic(static); err != nil {
				return err
			}
			g, gctx := errgroup.WithContext(ctx)
			if !noNATS && (natsURL != "" || len(static) == 0) {
				conn, err := eventplane.Connect(ctx, eventplane.Config{URL: natsURL, Port: natsPort, Logger: log})
				if err != nil {
					return err
				}
				defer conn.Close()
				if natsURL == "" {
					log.Info("embedded NATS started; point workers at it", "nats", conn.ClientURL())
				}
				scfg := eventplane.SubscriberConfig{Model: cfg.Model, Logger: log}
				scfg.Events.OnMessage = fe.ObservePublished // kvrouter_event_lag_seconds
				sub = eventplane.NewSubscriber(conn, fe, scfg)
				g.Go(func() error { return sub.Run(gctx) })
				reg := discovery.NewRegistry(conn, discovery.RegistryConfig{Logger: log})
				g.Go(func() error { return reg.Watch(gctx, members) })
			}
			var sources []zmqsub.Source
			for _, w := range static {
				if w.EventEndpoint != "" {
					sources = append(sources, zmqsub.Source{WorkerID: w.ID, Endpoint: w.EventEndpoint,
						Replay: w.ReplayEndpoint, DPSize: max(w.DPSize, 1)})
				}
			}
			if len(sources) > 0 {
				zs := zmqsub.New(zmqsub.Config{BlockSize: cfg.Router.BlockSize, Sources: sources, Logger: log,
					OnBatch: fe.ObservePublished}, fe)
				g.Go(func() error { return zs.Run(gctx) })
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			log.Info("router listening", "url", "http://"+ln.Addr().String(), "policy", cfg.Policy,
				"block_size", cfg.Router.BlockSize, "tokenizer", cfg.Tokenizer.Name(), "static_workers", len(static),
				"index", cfg.Index, "auth", len(cfg.APIKeys) > 0)
			g.Go(func() error { return fe.Serve(gctx, ln) })
			return g.Wait()
		},
	}
	f := c.Flags()
	f.StringVar(&addr, "addr", "0.0.0.0:8080", "listen address")
	f.StringVar(&cfg.Model, "model", cfg.Model, "served model name (/v1/models; NATS subject token)")
	f.StringVar(&tok, "tokenizer", "builtin", "builtin, remote (ask workers' /tokenize), or a tokenizer.json file / model directory")
	f.StringSliceVar(&tokURLs, "tokenizer-url", nil, "with --tokenizer remote: worker base URLs to ask (default: the static workers)")
	f.StringVar(&policy, "policy", "kv", "kv, approx, load, round-robin or random")
	f.StringVar(&preset, "preset", "", "router cost preset: default (time cost) or dynamo (Dynamo's formula and defaults); explicit flags override it")
	f.StringVar(&cfg.Index, "index", cfg.Index, "event-fed index: radix or flash")
	f.IntVar(&cfg.Router.BlockSize, "block-size", router.DefaultBlockSize, "tokens per KV block; must equal the workers'")
	f.Float64Var(&cfg.Router.Selector.OverlapCredit, "overlap-credit", cfg.Router.Selector.OverlapCredit, "credit per cached device block (0 = pure load balancing)")
	f.Float64Var(&cfg.Router.Selector.PrefillLoadScale, "prefill-load-scale", cfg.Router.Selector.PrefillLoadScale, "weight of the prefill term")
	f.Float64Var(&cfg.Router.Selector.Temperature, "temperature", cfg.Router.Selector.Temperature, "softmax temperature (0 = argmin)")
	f.Float64Var(&cfg.Router.Selector.BusyKVUsage, "busy-kv-usage", cfg.Router.Selector.BusyKVUsage, "a worker with KV usage above this is busy (0 = off)")
	f.IntVar(&cfg.Router.Selector.BusyPrefillTokens, "busy-prefill-tokens", cfg.Router.Selector.BusyPrefillTokens, "a worker with more active prefill tokens is busy (0 = off)")
	f.Float64Var(&cfg.Router.Queue.Threshold, "queue-threshold", 0, "queue requests while every worker's prefill exceeds this fraction of its batch budget (0 = no queue)")
	f.StringVar(&queuePolicy, "queue-policy", "", "fcfs or wspt")
	f.BoolVar(&affinity, "session-affinity", false, "bind x-session-id to the worker of its first request")
	f.StringVar(&natsURL, "nats", "", "NATS URL for KV events and worker registration (default: embedded server when no --worker)")
	f.IntVar(&natsPort, "embedded-nats-port", 4222, "port of the embedded NATS server (0 = any free port)")
	f.BoolVar(&noNATS, "no-nats", false, "use neither NATS nor the embedded server (static workers with ZMQ events)")
	f.StringArrayVar(&workerFlags, "worker", nil, "static worker: URL[,id=N,zmq=tcp://...,replay=tcp://...,bs=N] (repeatable)")
	f.StringVar(&workersFile, "workers-file", "", "YAML file with a static worker list")
	f.StringArrayVar(&cfg.APIKeys, "api-key", nil, "accepted client API key (repeatable; none = open)")
	f.StringArrayVar(&cfg.AdminKeys, "admin-key", nil, "admin API key for /debug/* (repeatable; none = client keys)")
	f.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", cfg.MaxBodyBytes, "largest request body accepted (413 beyond)")
	f.IntVar(&cfg.MaxPromptTokens, "max-prompt-tokens", 0, "longest prompt accepted in tokens (0 = no limit)")
	f.IntVar(&cfg.Retries, "retries", cfg.Retries, "other workers to try when the chosen one is unreachable")
	f.DurationVar(&cfg.DrainTimeout, "drain-timeout", cfg.DrainTimeout, "how long shutdown waits for in-flight streams")
	f.DurationVar(&cfg.LoadPollInterval, "load-poll", cfg.LoadPollInterval, "how often workers' GET /load is polled (negative = never)")
	f.Uint64Var(&cfg.Seed, "seed", 0, "tie-break seed (0 = random; replicas must differ)")
	f.BoolVar(&cfg.ForwardTokens, "forward-tokens", true, "send completion prompts to workers as token ids")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return c
}
