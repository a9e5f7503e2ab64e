package main

import (
	"os"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/cli"
	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newMockerCmd() *cobra.Command {
	cfg := app.DefaultMockerConfig()
	var printConfig bool
	c := &cobra.Command{
		Use:   "mocker",
		Short: "Run one simulated vLLM worker (OpenAI API, KV events, load metrics) in real time",
		Long: `Runs the mocker engine core in real time behind an OpenAI-compatible HTTP API.
With --nats it publishes its KV events to the JetStream stream and registers itself
in the NATS KV bucket, so a 'kvrouter serve --nats ...' finds it.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eff, err := app.Resolve(cmd.Flags(), app.DefaultMockerConfig(), bindMockerFlags, os.Environ())
			if err != nil {
				return err
			}
			if printConfig {
				if err := eff.Validate(); err != nil {
					return err
				}
				return app.WriteYAML(cmd.OutOrStdout(), eff)
			}
			return app.RunMocker(cmd.Context(), eff)
		},
	}
	bindMockerFlags(c.Flags(), &cfg)
	cli.ConfigFlags(c.Flags(), &printConfig)
	clihelp.Apply(c, clihelp.Help{EnvPrefix: app.EnvPrefix, Sections: mockerSections})
	return c
}

// mockerSections groups the mocker's flags for --help.
var mockerSections = []clihelp.Section{
	{Name: "Worker", Shown: "addr advertise-url worker-id model tokenizer",
		More: "default-max-tokens drain-timeout"},
	{Name: "Engine", Shown: "block-size num-blocks speedup-ratio",
		More: "max-num-seqs max-num-batched-tokens watermark enable-prefix-caching max-loras model-kind"},
	{Name: "KV events and registration", Shown: "nats zmq-pub zmq-replay", More: "no-register"},
	{Name: "NATS credentials", More: "nats-user nats-password nats-token nats-nkey nats-creds nats-tls-ca nats-tls-cert nats-tls-key nats-tls-insecure"},
	{Name: "KV tiers", More: "tiers write-through offload-min-reuse"},
	{Name: "Disaggregated prefill and decode", More: "role kv-transfer-bandwidth kv-transfer-latency hold-timeout"},
	{Name: "Config and logs", Shown: "config print-config log-level"},
}

// bindMockerFlags binds the mocker's flags to c's fields, each defaulting
// to the field's current value.
func bindMockerFlags(f *pflag.FlagSet, c *app.MockerConfig) {
	mc := &c.Mocker
	e := &mc.Engine
	f.StringVar(&c.Listen, "addr", c.Listen, "listen address")
	f.StringVar(&c.AdvertiseURL, "advertise-url", c.AdvertiseURL, "URL the router uses to reach this worker (default http://<addr>)")
	f.StringVar(&c.Role, "role", c.Role, "disaggregated serving role registered with the worker: prefill, decode or both (default both)")
	f.Uint64Var(&c.WorkerID, "worker-id", c.WorkerID, "worker id in KV events and discovery")
	f.StringVar(&mc.Model, "model", mc.Model, "served model name")
	f.StringVar(&c.Tokenizer, "tokenizer", c.Tokenizer, "tokenizer: builtin, or a tokenizer.json file / model directory")
	f.IntVar(&e.BlockSize, "block-size", e.BlockSize, "tokens per KV block (must equal the router's)")
	f.IntVar(&e.NumBlocks, "num-blocks", e.NumBlocks, "KV cache capacity in blocks")
	f.IntVar(&e.MaxNumSeqs, "max-num-seqs", e.MaxNumSeqs, "max running requests")
	f.IntVar(&mc.MaxLoRAs, "max-loras", mc.MaxLoRAs, "LoRA adapter slots: serve any other model name as an adapter, loaded on first use (0 = base model only)")
	f.IntVar(&e.MaxNumBatchedTokens, "max-num-batched-tokens", e.MaxNumBatchedTokens, "token budget per forward pass")
	f.Float64Var(&e.Watermark, "watermark", e.Watermark, "fraction of blocks kept free at admission")
	f.BoolVar(&e.EnablePrefixCaching, "enable-prefix-caching", e.EnablePrefixCaching, "cache blocks and emit KV events")
	f.Float64Var(&e.SpeedupRatio, "speedup-ratio", e.SpeedupRatio, "divide modeled pass time by this (0 = no sleeping)")
	f.Float64Var(&e.KVTransfer.Bandwidth, "kv-transfer-bandwidth", e.KVTransfer.Bandwidth, "disaggregated decode: bytes/s pulling a prefill worker's KV blocks")
	f.DurationVar(&e.KVTransfer.Latency, "kv-transfer-latency", e.KVTransfer.Latency, "disaggregated decode: latency per KV pull")
	f.DurationVar(&e.HoldTimeout, "hold-timeout", e.HoldTimeout, "disaggregated prefill: how long finished blocks wait for a decode worker's pull")
	cli.BindEngineTiers(f, &c.Tiers, e)
	cli.BindModelKind(f, e)
	f.IntVar(&mc.DefaultMaxTokens, "default-max-tokens", mc.DefaultMaxTokens, "output tokens when a request gives no max_tokens")
	f.StringVar(&c.NATS.URL, "nats", c.NATS.URL, "NATS URL: publish KV events to JetStream and register in the worker bucket")
	cli.BindNATSAuth(f, &c.NATS)
	f.BoolVar(&c.NoRegister, "no-register", c.NoRegister, "with --nats, publish events but do not register")
	f.StringVar(&c.ZMQPub, "zmq-pub", c.ZMQPub, "also publish KV events vLLM-style on a ZMQ PUB socket, e.g. tcp://127.0.0.1:5557")
	f.StringVar(&c.ZMQReplay, "zmq-replay", c.ZMQReplay, "with --zmq-pub, serve replay requests on this ROUTER endpoint, e.g. tcp://127.0.0.1:5558")
	f.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "how long shutdown waits for in-flight requests")
	f.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
}
