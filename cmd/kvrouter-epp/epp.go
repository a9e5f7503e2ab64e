package main

import (
	"os"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/cli"
	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/kvrouter/kvrouter/internal/epp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newEPPCmd() *cobra.Command {
	cfg := epp.DefaultConfig()
	var printConfig bool
	var preset string
	c := &cobra.Command{
		Use:           "kvrouter-epp",
		SilenceUsage:  true,
		SilenceErrors: true,
		Short:         "Run the router as a Gateway API Inference Extension endpoint picker (Envoy ext_proc)",
		Long: `Serves Envoy's external processing protocol (envoy.service.ext_proc.v3) as the
Endpoint Picker of a Gateway API Inference Extension InferencePool: for each request the
gateway sends the headers and the body (FULL_DUPLEX_STREAMED or BUFFERED); the picker
parses the OpenAI request (completions, chat), tokenizes, hashes and routes it with the
same router core as 'kvrouter serve', and answers with the x-gateway-destination-endpoint
header and the same ip:port under the envoy.lb dynamic metadata. A subset hint
(envoy.lb.subset_hint / x-gateway-destination-endpoint-subset) restricts the pick; nothing
eligible is an ImmediateResponse 503 (429 when every worker is overloaded). The response
phase drives the load tracker: the first body chunk ends the prefill, the end of the body,
a broken stream or a reset frees the request. gRPC health: "", liveness, readiness and
envoy.service.ext_proc.v3.ExternalProcessor.

Workers: --pool-selector watches the InferencePool's ready pods (in-cluster, or
--kubeconfig), else the static list (--worker) and the NATS registry as in serve. KV events:
a bound ZMQ SUB the vLLM pods publish to (--zmq-bind, topic kv@<pod-ip>@<model>;
unauthenticated: admit only the engine pods to its port, as the Helm chart's NetworkPolicy does), each
static worker's ZMQ PUB (zmq=...), each ready pod's ZMQ PUB dialled at
tcp://<pod-ip>:--pool-zmq-port (or its kvrouter.io/zmq-endpoint annotation), or NATS. The HTTP side (--addr) serves /metrics,
/readyz, /debug/* and the OpenAI API as serve does.

Every flag is also read from the environment (KVROUTER_<FLAG>) and from --config FILE,
with serve's precedence: flag > environment > file > default.`,
		Example: `  kvrouter-epp --pool-selector app=vllm-llama3 --pool-target-port 8000 --zmq-bind tcp://0.0.0.0:5557 --tokenizer /models/llama3/
  kvrouter-epp --worker http://10.0.0.5:8000,id=1,zmq=tcp://10.0.0.5:5557 --no-nats --grpc-addr 127.0.0.1:9002`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			def := epp.DefaultConfig()
			if v, ok := os.LookupEnv(app.EnvName("preset")); ok && !cmd.Flags().Changed("preset") {
				preset = v
			}
			if err := cli.PresetRouter(&def.Serve.Frontend.Router, preset); err != nil {
				return err
			}
			eff, err := app.Resolve(cmd.Flags(), def, bindEPPFlags, os.Environ())
			if err != nil {
				return err
			}
			if printConfig {
				if err := eff.Validate(); err != nil {
					return err
				}
				eff.Serve = eff.Serve.Redacted()
				return app.WriteYAML(cmd.OutOrStdout(), eff)
			}
			return epp.Run(cmd.Context(), eff)
		},
	}
	bindEPPFlags(c.Flags(), &cfg)
	cli.ConfigFlags(c.Flags(), &printConfig)
	c.Flags().StringVar(&preset, "preset", "", "router cost preset: default (time cost) or dynamo (Dynamo's formula and defaults); file, env and flags override single knobs (env KVROUTER_PRESET)")
	clihelp.Apply(c, clihelp.Help{EnvPrefix: app.EnvPrefix, Sections: eppSections()})
	return c
}

// eppSections groups epp's flags for --help: the picker's own, then
// serve's, showing what deploy/kubernetes/epp.yaml sets.
func eppSections() []clihelp.Section {
	own := clihelp.Section{Name: "Endpoint picker", Shown: "grpc-addr pool-selector pool-namespace pool-target-port pool-zmq-port",
		More: "pool-zmq-replay-port pool-resync kubeconfig body-mode destination-namespace subset-namespace fallbacks"}
	return append([]clihelp.Section{own}, clihelp.Reshow(cli.ServeSections,
		"zmq-bind no-nats worker model tokenizer tokenizer-url block-size policy addr config print-config log-level")...)
}

// bindEPPFlags binds serve's flags (router, tokenizer, workers, events;
// --addr is the HTTP side) and the picker's own.
func bindEPPFlags(f *pflag.FlagSet, c *epp.Config) {
	cli.BindServe(f, &c.Serve)
	f.StringVar(&c.GRPCAddr, "grpc-addr", c.GRPCAddr, "ext_proc and gRPC health listen address")
	f.StringVar(&c.Protocol.BodyMode, "body-mode", c.Protocol.BodyMode, "body mode assumed when Envoy sends no protocol_config: full-duplex-streamed, buffered, streamed or none")
	f.StringVar(&c.Protocol.DestinationNamespace, "destination-namespace", c.Protocol.DestinationNamespace, "dynamic metadata namespace of the picked endpoint")
	f.StringVar(&c.Protocol.SubsetNamespace, "subset-namespace", c.Protocol.SubsetNamespace, "filter metadata namespace of the endpoint subset hint")
	f.IntVar(&c.Protocol.Fallbacks, "fallbacks", c.Protocol.Fallbacks, "fallback endpoints listed after the pick (ip:port,ip:port,...), next cheapest first, for a proxy that retries; the one it reports as served carries the load (0: the pick alone)")
	f.StringVar(&c.Pool.Selector, "pool-selector", c.Pool.Selector, "InferencePool pod label selector (app=vllm); empty = no pod discovery")
	f.StringVar(&c.Pool.Namespace, "pool-namespace", c.Pool.Namespace, "namespace of the InferencePool's pods")
	f.IntVar(&c.Pool.TargetPort, "pool-target-port", c.Pool.TargetPort, "the model servers' port (InferencePool targetPorts)")
	f.StringVar(&c.Pool.Kubeconfig, "kubeconfig", c.Pool.Kubeconfig, "kubeconfig file (default: in-cluster service account)")
	f.DurationVar(&c.Pool.Resync, "pool-resync", c.Pool.Resync, "re-deliver every pod this often (0 = never)")
	f.IntVar(&c.Pool.ZMQReplayPort, "pool-zmq-replay-port", c.Pool.ZMQReplayPort, "with a dialled PUB, ask tcp://POD_IP:PORT (vLLM replay_endpoint) for missed batches on a sequence gap instead of clearing the pod's blocks; 0 = no replay, unless a pod is annotated kvrouter.io/zmq-replay-endpoint")
	f.IntVar(&c.Pool.ZMQPort, "pool-zmq-port", c.Pool.ZMQPort, "dial each ready pod's KV-event PUB at tcp://POD_IP:PORT (vLLM endpoint tcp://*:PORT); 0 = only pods annotated kvrouter.io/zmq-endpoint")
}
