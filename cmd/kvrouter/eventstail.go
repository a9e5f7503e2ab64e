package main

import (
	"log/slog"
	"os"

	"github.com/kvrouter/kvrouter/internal/eventdump"
	"github.com/spf13/cobra"
)

// newEventsTailCmd prints live KV events as JSON lines.
func newEventsTailCmd() *cobra.Command {
	var cfg eventdump.TailConfig
	ncfg := &cfg.NATS
	c := &cobra.Command{
		Use:   "tail",
		Short: "Print live KV events as JSON lines (from NATS or an engine's ZMQ PUB) until Ctrl-C",
		Example: "  kvrouter events tail --nats nats://127.0.0.1:4222\n" +
			"  kvrouter events tail --zmq tcp://127.0.0.1:5557 --replay tcp://127.0.0.1:5558 --block-size 16",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
			return eventdump.Tail(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	fs := c.Flags()
	fs.StringVar(&ncfg.URL, "nats", "", "NATS server URL")
	fs.StringVar(&ncfg.User, "nats-user", "", "NATS user")
	fs.StringVar(&ncfg.Password, "nats-password", "", "NATS password")
	fs.StringVar(&ncfg.Token, "nats-token", "", "NATS token")
	fs.StringVar(&ncfg.CredsFile, "nats-creds", "", "NATS credentials file")
	fs.StringVar(&ncfg.TLSCA, "nats-tls-ca", "", "NATS TLS CA bundle")
	fs.StringVar(&cfg.Subject, "subject", "kvrouter.*.kv.*", "NATS subject filter (e.g. kvrouter.llama.kv.3)")
	fs.StringVar(&cfg.ZMQ, "zmq", "", "engine ZMQ PUB endpoint")
	fs.StringVar(&cfg.Replay, "replay", "", "engine ZMQ replay endpoint")
	fs.IntVar(&cfg.BlockSize, "block-size", 16, "engine block size (ZMQ)")
	fs.Uint64Var(&cfg.WorkerID, "worker-id", 0, "worker id stamped on ZMQ events")
	return c
}
