package main

import (
	"os"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/cli"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newBridgeCmd republishes one engine's ZMQ KV events into JetStream.
func newBridgeCmd() *cobra.Command {
	cfg := app.DefaultBridgeConfig()
	var printConfig bool
	c := &cobra.Command{
		Use:   "bridge",
		Short: "Republish one vLLM/SGLang engine's ZMQ KV events into the NATS JetStream stream",
		Long: `Subscribes to one engine's ZMQ KV events (with replay on gaps) and republishes them
into the JetStream stream under kvrouter.<model>.kv.<worker-id>, continuing the event
numbering where the stream stopped. Block size and model default to serve's and
mocker's (64, kvrouter-mock). Flags are also read from KVROUTER_* environment variables
and a YAML file (--config), as for serve.`,
		Example: "  kvrouter bridge --zmq tcp://engine:5557 --replay tcp://engine:5558 --worker-id 3 \\\n" +
			"    --block-size 16 --model llama --nats nats://nats:4222",
		RunE: func(cmd *cobra.Command, _ []string) error {
			eff, err := app.Resolve(cmd.Flags(), app.DefaultBridgeConfig(), bindBridgeFlags, os.Environ())
			if err != nil {
				return err
			}
			if printConfig {
				if err := eff.Validate(); err != nil {
					return err
				}
				return app.WriteYAML(cmd.OutOrStdout(), eff)
			}
			return app.RunBridge(cmd.Context(), eff)
		},
	}
	bindBridgeFlags(c.Flags(), &cfg)
	cli.ConfigFlags(c.Flags(), &printConfig)
	return c
}

// bindBridgeFlags binds the bridge's flags to c's fields, each defaulting
// to the field's current value.
func bindBridgeFlags(fs *pflag.FlagSet, c *app.BridgeConfig) {
	cli.BindNATS(fs, &c.NATS, "nats-port")
	fs.StringVar(&c.ZMQ, "zmq", c.ZMQ, "engine ZMQ PUB endpoint (tcp://host:port; required)")
	fs.StringVar(&c.Replay, "replay", c.Replay, "engine ZMQ replay endpoint (optional)")
	fs.Uint64Var(&c.WorkerID, "worker-id", c.WorkerID, "router worker id of this engine (required)")
	fs.IntVar(&c.DPSize, "dp-size", c.DPSize, "data-parallel ranks (rank r on port + r)")
	fs.IntVar(&c.BlockSize, "block-size", c.BlockSize, "engine KV block size in tokens (must equal the router's)")
	fs.StringVar(&c.Model, "model", c.Model, "model name (subject kvrouter.<model>.kv.<worker>)")
	fs.StringVar(&c.Format, "format", c.Format, "stream payload: msgpack or json")
	fs.Int64Var(&c.ZMQMaxMessageBytes, "zmq-max-message-bytes", c.ZMQMaxMessageBytes, "largest ZMQ message (frame, and frames of one message together) read from the engine; a peer announcing more is dropped before it is allocated")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
}
