package main

import (
	"os"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/cli"
	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/spf13/cobra"
)

func newServeCmd() *cobra.Command {
	cfg := app.DefaultServeConfig()
	var printConfig bool
	var preset string
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the KV-aware router frontend (OpenAI API) in front of a fleet of workers",
		Long: `Tokenizes each request with the model's tokenizer, routes it to the worker holding
the longest cached prefix (minus its load), forwards it and streams the answer back.

Workers come from the NATS KV registry (workers started with 'kvrouter mocker --nats URL'
or any engine that registers) and/or a static list (--worker, --workers-file). KV events
come from the JetStream stream, or over ZMQ from vLLM/SGLang engines in one of two topologies:
  connect: the engine binds its PUB (vLLM "endpoint":"tcp://*:5557"); the router dials
           each one, named per worker (--worker URL,zmq=tcp://HOST:5557[,replay=...]).
  bind:    the router binds one SUB on the engines' network (--zmq-bind
           tcp://10.0.0.1:5557) and every engine connects its PUB to it (vLLM "endpoint":"tcp://ROUTER:5557" with
           "topic":"kv@<pod>@<model>"); <pod> names the worker: its pod= option, else
           its URL's host:port, else its URL's host. Events of a pod no worker has are
           held for 30s in case it registers, then dropped (counted); a topic model
           other than the worker's is dropped (counted). ZMQ is unauthenticated: any
           publisher that reaches the bound port can add or clear any pod's blocks, so
           only the engines may reach it (bind an address of their network, firewall it).
With neither --nats nor --worker an embedded NATS server is started.`,
		Example: `  kvrouter serve --nats nats://127.0.0.1:4222 --tokenizer ./Qwen3-8B/
  kvrouter serve --worker http://10.0.0.5:8000,id=1,zmq=tcp://10.0.0.5:5557,replay=tcp://10.0.0.5:5558,bs=16 --block-size 16
  kvrouter serve --zmq-bind tcp://10.0.0.1:5557 --worker http://10.0.0.5:8000 --worker http://10.0.0.6:8000
  kvrouter serve --print-config > kvrouter.yaml; kvrouter serve --config kvrouter.yaml`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The preset replaces the default cost knobs; a file, the
			// environment and flags then override single knobs on top.
			def := app.DefaultServeConfig()
			if v, ok := os.LookupEnv(app.EnvName("preset")); ok && !cmd.Flags().Changed("preset") {
				preset = v
			}
			if err := cli.PresetRouter(&def.Frontend.Router, preset); err != nil {
				return err
			}
			eff, err := app.Resolve(cmd.Flags(), def, cli.BindServe, os.Environ())
			if err != nil {
				return err
			}
			if printConfig {
				if err := eff.Validate(); err != nil {
					return err
				}
				return app.WriteYAML(cmd.OutOrStdout(), eff)
			}
			return app.RunServe(cmd.Context(), eff)
		},
	}
	cli.BindServe(c.Flags(), &cfg)
	cli.ConfigFlags(c.Flags(), &printConfig)
	c.Flags().StringVar(&preset, "preset", "", "router cost preset: default (time cost) or dynamo (Dynamo's formula and defaults); file, env and flags override single knobs (env KVROUTER_PRESET)")
	clihelp.Apply(c, clihelp.Help{EnvPrefix: app.EnvPrefix, Sections: cli.ServeSections})
	return c
}
