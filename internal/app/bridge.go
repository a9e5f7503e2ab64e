package app

import (
	"context"
	"fmt"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/kvevents"
	"golang.org/x/sync/errgroup"
)

// RunBridge runs `kvrouter bridge` until ctx is done: it republishes one
// engine's ZMQ KV events (vLLM/SGLang) into the JetStream stream,
// continuing the event numbering where the stream stopped.
func RunBridge(ctx context.Context, cfg BridgeConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	log, err := loggerOr(cfg.Logger, cfg.LogLevel)
	if err != nil {
		return err
	}
	logConfig(log, "effective config", cfg.Redacted())
	format, err := eventplane.ParseFormat(cfg.Format)
	if err != nil {
		return err
	}
	nc := cfg.NATS
	nc.Logger = log.With("component", "nats")
	conn, err := eventplane.Connect(ctx, nc)
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	defer conn.Close()
	if conn.Embedded() {
		log.Warn("no --nats given: publishing into an embedded server only this process can see", "url", conn.ClientURL())
	}
	last, err := eventplane.LastEventIDs(ctx, conn, cfg.Model, cfg.WorkerID)
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	pub := eventplane.NewPublisher(conn, eventplane.PublisherConfig{Model: cfg.Model, Format: format, Logger: log})
	src := zmqsub.Source{Endpoint: cfg.ZMQ, Replay: cfg.Replay, WorkerID: cfg.WorkerID, DPSize: cfg.DPSize}
	zcfg := zmqsub.Config{BlockSize: cfg.BlockSize, Sources: []zmqsub.Source{src}, Logger: log, MaxMessageBytes: cfg.ZMQMaxMessageBytes,
		StartID: func(w kvevents.Worker) uint64 { return last[w] }}
	if err := zcfg.Validate(); err != nil {
		return err
	}
	sub := zmqsub.New(zcfg, zmqsub.SinkFunc(func(ev *kvevents.Event) error { return pub.Publish(ctx, *ev) }))
	log.Info("bridge started", "zmq", src.Endpoint, "replay", src.Replay, "worker", src.WorkerID,
		"subject", conn.Subject(cfg.Model, src.WorkerID), "nats", conn.ClientURL())
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
}
