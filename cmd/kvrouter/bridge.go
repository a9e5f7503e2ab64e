package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
)

// newBridgeCmd republishes one engine's ZMQ KV events into JetStream.
func newBridgeCmd() *cobra.Command {
	var (
		ncfg   eventplane.Config
		src    zmqsub.Source
		bs     int
		model  string
		format string
	)
	c := &cobra.Command{
		Use:   "bridge",
		Short: "Republish one vLLM/SGLang engine's ZMQ KV events into the NATS JetStream stream",
		Example: "  kvrouter bridge --zmq tcp://engine:5557 --replay tcp://engine:5558 --worker-id 3 \\\n" +
			"    --block-size 16 --model llama --nats nats://nats:4222",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			f, err := eventplane.ParseFormat(format)
			if err != nil {
				return err
			}
			ncfg.Logger = log
			conn, err := eventplane.Connect(ctx, ncfg)
			if err != nil {
				return err
			}
			defer conn.Close()
			if conn.Embedded() {
				log.Warn("no --nats given: publishing into an embedded server only this process can see", "url", conn.ClientURL())
			}
			// Continue the event numbering where the stream stopped.
			last, err := eventplane.LastEventIDs(ctx, conn, model, src.WorkerID)
			if err != nil {
				return err
			}
			pub := eventplane.NewPublisher(conn, eventplane.PublisherConfig{Model: model, Format: f, Logger: log})
			zcfg := zmqsub.Config{BlockSize: bs, Sources: []zmqsub.Source{src}, Logger: log,
				StartID: func(w kvevents.Worker) uint64 { return last[w] }}
			if err := zcfg.Validate(); err != nil {
				return err
			}
			sub := zmqsub.New(zcfg, zmqsub.SinkFunc(func(ev *kvevents.Event) error { return pub.Publish(ctx, *ev) }))
			log.Info("bridge started", "zmq", src.Endpoint, "replay", src.Replay, "worker", src.WorkerID,
				"subject", conn.Subject(model, src.WorkerID), "nats", conn.ClientURL())
			g, gctx := errgroup.WithContext(ctx)
			g.Go(func() error { return pub.Run(gctx) })
			g.Go(func() error { return sub.Run(gctx) })
			err = g.Wait()
			st := sub.Stats()
			log.Info("bridge stopped", "events", st.Events, "gaps", st.Gaps, "replayed", st.Replayed, "resyncs", st.Resyncs,
				"published", pub.Stats().Events)
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("bridge: %w", err)
			}
			return nil
		},
	}
	fs := c.Flags()
	bindNATSFlags(fs, &ncfg)
	fs.StringVar(&src.Endpoint, "zmq", "", "engine ZMQ PUB endpoint (tcp://host:port)")
	fs.StringVar(&src.Replay, "replay", "", "engine ZMQ replay endpoint (optional)")
	fs.Uint64Var(&src.WorkerID, "worker-id", 0, "router worker id of this engine")
	fs.IntVar(&src.DPSize, "dp-size", 1, "data-parallel ranks (rank r on port + r)")
	fs.IntVar(&bs, "block-size", 16, "engine KV block size in tokens (must equal the router's)")
	fs.StringVar(&model, "model", "default", "model name (subject kvrouter.<model>.kv.<worker>)")
	fs.StringVar(&format, "format", "msgpack", "stream payload: msgpack or json")
	_ = c.MarkFlagRequired("zmq")
	_ = c.MarkFlagRequired("worker-id")
	return c
}
