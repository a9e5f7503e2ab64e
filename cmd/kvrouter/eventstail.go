package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
)

// newEventsTailCmd prints live KV events as JSON lines.
func newEventsTailCmd() *cobra.Command {
	var (
		ncfg    eventplane.Config
		zmqEP   string
		replay  string
		bs      int
		worker  uint64
		subject string
	)
	c := &cobra.Command{
		Use:   "tail",
		Short: "Print live KV events as JSON lines (from NATS or an engine's ZMQ PUB) until Ctrl-C",
		Example: "  kvrouter events tail --nats nats://127.0.0.1:4222\n" +
			"  kvrouter events tail --zmq tcp://127.0.0.1:5557 --replay tcp://127.0.0.1:5558 --block-size 16",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			w := bufio.NewWriter(cmd.OutOrStdout())
			var mu sync.Mutex
			print := func(ev *kvevents.Event) error {
				mu.Lock()
				defer mu.Unlock()
				b := kvevents.AppendJSON(nil, ev)
				b = append(b, '\n')
				if _, err := w.Write(b); err != nil {
					return err
				}
				return w.Flush()
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			switch {
			case zmqEP != "" && ncfg.URL != "":
				return errors.New("events tail: give --nats or --zmq, not both")
			case zmqEP != "":
				sub := zmqsub.New(zmqsub.Config{BlockSize: bs, Logger: log,
					Sources: []zmqsub.Source{{WorkerID: worker, Endpoint: zmqEP, Replay: replay}}},
					zmqsub.SinkFunc(print))
				return sub.Run(ctx)
			case ncfg.URL != "":
				return tailNATS(ctx, ncfg, subject, print, log)
			}
			return errors.New("events tail: give --nats URL or --zmq ENDPOINT")
		},
	}
	fs := c.Flags()
	fs.StringVar(&ncfg.URL, "nats", "", "NATS server URL")
	fs.StringVar(&ncfg.User, "nats-user", "", "NATS user")
	fs.StringVar(&ncfg.Password, "nats-password", "", "NATS password")
	fs.StringVar(&ncfg.Token, "nats-token", "", "NATS token")
	fs.StringVar(&ncfg.CredsFile, "nats-creds", "", "NATS credentials file")
	fs.StringVar(&ncfg.TLSCA, "nats-tls-ca", "", "NATS TLS CA bundle")
	fs.StringVar(&subject, "subject", "kvrouter.*.kv.*", "NATS subject filter (e.g. kvrouter.llama.kv.3)")
	fs.StringVar(&zmqEP, "zmq", "", "engine ZMQ PUB endpoint")
	fs.StringVar(&replay, "replay", "", "engine ZMQ replay endpoint")
	fs.IntVar(&bs, "block-size", 16, "engine block size (ZMQ)")
	fs.Uint64Var(&worker, "worker-id", 0, "worker id stamped on ZMQ events")
	return c
}

// tailNATS prints live stream messages (core subscription: no replay of
// history, no consumer state left on the server).
func tailNATS(ctx context.Context, cfg eventplane.Config, subject string, print func(*kvevents.Event) error, log *slog.Logger) error {
	cfg.Logger = log
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
