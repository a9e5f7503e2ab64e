package main

import (
	"net"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/mockerd"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
)

func newMockerCmd() *cobra.Command {
	cfg := mockerd.DefaultConfig()
	var (
		addr, tok, natsURL, advertise, logLevel, zmqPub, zmqReplay string
		workerID                                                   uint64
		noRegister                                                 bool
	)
	c := &cobra.Command{
		Use:   "mocker",
		Short: "Run one simulated vLLM worker (OpenAI API, KV events, load metrics) in real time",
		Long: `Runs the mocker engine core in real time behind an OpenAI-compatible HTTP API.
With --nats it publishes its KV events to the JetStream stream and registers itself
in the NATS KV bucket, so a 'kvrouter serve --nats ...' finds it.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			cfg.Logger = log
			cfg.Engine.Worker = kvevents.Worker{ID: workerID}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			url := advertise
			if url == "" {
				url = "http://" + ln.Addr().String()
			}
			if cfg.Tokenizer, err = loadTokenizer(tok, cfg.Model, []string{url}); err != nil {
				return err
			}
			ctx := cmd.Context()
			g, gctx := errgroup.WithContext(ctx)
			var reg *discovery.Registry
			if natsURL != "" {
				conn, err := eventplane.Connect(ctx, eventplane.Config{URL: natsURL, Logger: log})
				if err != nil {
					return err
				}
				defer conn.Close()
				// AssignIDs + Resume: a restarted mocker continues the event
				// ids of its previous life, so routers do not drop its new
				// events as duplicates.
				pub := eventplane.NewPublisher(conn, eventplane.PublisherConfig{Model: cfg.Model, Logger: log, AssignIDs: true})
				if err := pub.Resume(ctx, workerID); err != nil {
					return err
				}
				cfg.Sinks = append(cfg.Sinks, pub)
				g.Go(func() error { return pub.Run(gctx) })
				if !noRegister {
					reg = discovery.NewRegistry(conn, discovery.RegistryConfig{Logger: log})
				}
			}
			if zmqPub != "" {
				zp, err := mockerd.NewZMQPublisher(ctx, zmqPub, zmqReplay, cfg.Engine.BlockSize, log)
				if err != nil {
					return err
				}
				defer zp.Close()
				cfg.ZMQ = zp
			}
			srv, err := mockerd.New(cfg)
			if err != nil {
				return err
			}
			if reg != nil {
				w := discovery.Worker{ID: workerID, Model: cfg.Model, URL: url, BlockSize: cfg.Engine.BlockSize,
					TotalKVBlocks: cfg.Engine.NumBlocks, MaxBatchedTokens: cfg.Engine.MaxNumBatchedTokens, DPSize: 1,
					EventEndpoint: zmqPub, ReplayEndpoint: zmqReplay}
				g.Go(func() error { return reg.Keepalive(gctx, w) })
			}
			log.Info("mocker listening", "url", url, "worker", workerID, "model", cfg.Model,
				"block_size", cfg.Engine.BlockSize, "num_blocks", cfg.Engine.NumBlocks,
				"speedup_ratio", cfg.Engine.SpeedupRatio, "tokenizer", cfg.Tokenizer.Name(), "nats", natsURL != "")
			g.Go(func() error { return srv.Serve(gctx, ln, 30*time.Second) })
			return g.Wait()
		},
	}
	f := c.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8000", "listen address")
	f.StringVar(&advertise, "advertise-url", "", "URL the router uses to reach this worker (default http://<addr>)")
	f.Uint64Var(&workerID, "worker-id", 1, "worker id in KV events and discovery")
	f.StringVar(&cfg.Model, "model", cfg.Model, "served model name")
	f.StringVar(&tok, "tokenizer", "builtin", "tokenizer: builtin, or a tokenizer.json file / model directory")
	f.IntVar(&cfg.Engine.BlockSize, "block-size", cfg.Engine.BlockSize, "tokens per KV block (must equal the router's)")
	f.IntVar(&cfg.Engine.NumBlocks, "num-blocks", cfg.Engine.NumBlocks, "KV cache capacity in blocks")
	f.IntVar(&cfg.Engine.MaxNumSeqs, "max-num-seqs", cfg.Engine.MaxNumSeqs, "max running requests")
	f.IntVar(&cfg.Engine.MaxNumBatchedTokens, "max-num-batched-tokens", cfg.Engine.MaxNumBatchedTokens, "token budget per forward pass")
	f.Float64Var(&cfg.Engine.Watermark, "watermark", cfg.Engine.Watermark, "fraction of blocks kept free at admission")
	f.BoolVar(&cfg.Engine.EnablePrefixCaching, "enable-prefix-caching", true, "cache blocks and emit KV events")
	f.Float64Var(&cfg.Engine.SpeedupRatio, "speedup-ratio", 1, "divide modeled pass time by this (0 = no sleeping)")
	f.IntVar(&cfg.DefaultMaxTokens, "default-max-tokens", cfg.DefaultMaxTokens, "output tokens when a request gives no max_tokens")
	f.StringVar(&natsURL, "nats", "", "NATS URL: publish KV events to JetStream and register in the worker bucket")
	f.BoolVar(&noRegister, "no-register", false, "with --nats, publish events but do not register")
	f.StringVar(&zmqPub, "zmq-pub", "", "also publish KV events vLLM-style on a ZMQ PUB socket, e.g. tcp://127.0.0.1:5557")
	f.StringVar(&zmqReplay, "zmq-replay", "", "with --zmq-pub, serve replay requests on this ROUTER endpoint, e.g. tcp://127.0.0.1:5558")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return c
}
