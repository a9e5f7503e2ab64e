package eventdump

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/kvevents"
)

// TailConfig names one source of live events: NATS (NATS.URL set) or an
// engine's ZMQ PUB socket (ZMQ set), not both.
type TailConfig struct {
	// NATS is the connection; Subject filters the stream's subjects
	// (e.g. kvrouter.*.kv.*).
	NATS    eventplane.Config
	Subject string
	// ZMQ is the engine's PUB endpoint, Replay its replay endpoint
	// (optional); BlockSize is the engine's and WorkerID is stamped on its
	// events.
	ZMQ, Replay string
	BlockSize   int
	WorkerID    uint64
	// Logger receives undecodable messages and transport trouble; nil is
	// slog.Default().
	Logger *slog.Logger
}

// Tail writes live events to w as JSON lines, flushed per event, until ctx
// ends (then it returns nil) or a write fails.
func Tail(ctx context.Context, cfg TailConfig, w io.Writer) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	bw := bufio.NewWriter(w)
	var mu sync.Mutex
	print := func(ev *kvevents.Event) error {
		mu.Lock()
		defer mu.Unlock()
		b := kvevents.AppendJSON(nil, ev)
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
		return bw.Flush()
	}
	switch {
	case cfg.ZMQ != "" && cfg.NATS.URL != "":
		return errors.New("events tail: give --nats or --zmq, not both")
	case cfg.ZMQ != "":
		sub := zmqsub.New(zmqsub.Config{BlockSize: cfg.BlockSize, Logger: log,
			Sources: []zmqsub.Source{{WorkerID: cfg.WorkerID, Endpoint: cfg.ZMQ, Replay: cfg.Replay}}},
			zmqsub.SinkFunc(print))
		return sub.Run(ctx)
	case cfg.NATS.URL != "":
		ncfg := cfg.NATS
		ncfg.Logger = log
		return tailNATS(ctx, ncfg, cfg.Subject, print, log)
	}
	return errors.New("events tail: give --nats URL or --zmq ENDPOINT")
}

// tailNATS prints live stream messages (core subscription: no replay of
// history, no consumer state left on the server).
func tailNATS(ctx context.Context, cfg eventplane.Config, subject string, print func(*kvevents.Event) error, log *slog.Logger) error {
	conn, err := eventplane.Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	errc := make(chan error, 1)
	sub, err := conn.NC.Subscribe(subject, func(m *nats.Msg) {
		evs, err := eventplane.DecodeEnvelope(nil, m.Data)
		if err != nil {
			log.Warn("undecodable message", "subject", m.Subject, "err", err)
			return
		}
		for i := range evs {
			if err := print(&evs[i]); err != nil {
				select {
				case errc <- err:
				default:
				}
				return
			}
		}
	})
	if err != nil {
		return fmt.Errorf("events tail: subscribe %s: %w", subject, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		if errors.Is(err, io.ErrClosedPipe) {
			return nil
		}
		return err
	}
}
