package main

import (
	"fmt"
	"os"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/cli"
	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
	"github.com/spf13/cobra"
)

func newUpCmd() *cobra.Command {
	var (
		workers   int
		maxLoRAs  int
		disagg    string
		port      int
		host, tok string
		logLevel  string
		tiers     string
	)
	// The router and the workers take serve's and mocker's defaults.
	sc := app.DefaultServeConfig()
	sc.Frontend.MaxPromptTokens = 131072
	// A local --disagg fleet shows both hops on every request; serve's
	// default (router.DefaultDisaggPolicy) keeps short prompts together.
	sc.Frontend.Router.Disagg.Policy = router.DisaggAlways
	eng := app.DefaultMockerConfig().Mocker.Engine
	c := &cobra.Command{
		Use:   "up",
		Short: "Start a whole local fleet: embedded NATS, N mocker workers and the router",
		Long: `Starts, in one process, an embedded NATS server (JetStream), N simulated vLLM workers
(each with its own HTTP listener on 127.0.0.1) publishing KV events and registering
themselves, and the KV-aware router on --port: the same runtimes as 'kvrouter mocker'
and 'kvrouter serve'. Needs nothing from the network: the default model uses a
tokenizer compiled into the binary. Ctrl-C stops everything.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := app.CheckFlagRanges(cmd.Flags(), nil); err != nil {
				return err // before a worker is started
			}
			if _, err := router.EnabledFeatures(sc.Frontend.Router.EnableFeature); err != nil {
				return err
			}
			if l := eng.KVTransfer; l.Bandwidth > 0 {
				// Peer-KV hints are priced over the link the mockers pull over.
				sc.Frontend.Router.PeerHints.Link = selector.TransferLink(mocker.DefaultBytesPerToken, l.Bandwidth, l.Latency)
			}
			pools, err := router.ParsePools(disagg)
			if err != nil {
				return err
			}
			if eng.Hybrid.Enabled() && pools.Enabled() {
				return fmt.Errorf("--model-kind %s with --disagg: a hybrid engine does not model disaggregated hops", cmd.Flag("model-kind").Value)
			}
			if n := pools.Prefill + pools.Decode; n > app.MaxUpWorkers {
				return fmt.Errorf("--disagg %s: %d workers, want at most %d", disagg, n, app.MaxUpWorkers)
			}
			log, err := app.NewLogger(logLevel)
			if err != nil {
				return err
			}
			t, err := app.LoadTokenizer(tok, sc.Frontend.Model, nil)
			if err != nil {
				return err
			}
			fc := fleet.Config{Workers: workers, Engine: eng, Model: sc.Frontend.Model, Tokenizer: t, MaxLoRAs: maxLoRAs,
				Frontend: sc.Frontend, RouterAddr: fmt.Sprintf("%s:%d", host, port), Logger: log, Tiers: tiers}
			fc.Prefill, fc.Decode = pools.Prefill, pools.Decode
			f, err := newFleet(fc)
			if err != nil {
				return err
			}
			ready, err := f.RunAnnounced(cmd.Context(), os.Stdout, sc.Frontend.APIKeys)
			if ready {
				fmt.Fprintln(os.Stderr, "kvrouter: stopped")
			}
			return err
		},
	}
	fl := c.Flags()
	fl.IntVar(&workers, "workers", 4, "number of mocker workers")
	fl.StringVar(&disagg, "disagg", "", "disaggregated fleet P:D: P prefill and D decode mockers (instead of --workers)")
	cli.TextVar(fl, &sc.Frontend.Router.Disagg.Policy, "disagg-policy", "with --disagg: when a request takes the prefill hop: always (default here, to show both hops), isl (serve's default), prefill-load or isl-or-load")
	fl.Float64Var(&eng.KVTransfer.Bandwidth, "kv-transfer-bandwidth", eng.KVTransfer.Bandwidth, "with --disagg or --enable-feature=peer-kv-hints: worker-to-worker KV transfer bandwidth, bytes/s (the router prices hints over it)")
	fl.DurationVar(&eng.KVTransfer.Latency, "kv-transfer-latency", eng.KVTransfer.Latency, "with --disagg or --enable-feature=peer-kv-hints: latency per KV transfer")
	fl.IntVar(&port, "port", 8080, "router port")
	fl.StringVar(&host, "host", "127.0.0.1", "router listen host")
	cli.TextVar(fl, &sc.Frontend.Router.Policy, "policy", "kv, approx, load, round-robin or random")
	fl.StringVar(&sc.Frontend.Index, "index", sc.Frontend.Index, "event-fed index: flash or radix")
	fl.StringVar(&tok, "tokenizer", "builtin", "builtin, or a tokenizer.json file / model directory (router and workers)")
	fl.IntVar(&eng.BlockSize, "block-size", eng.BlockSize, "tokens per KV block")
	fl.IntVar(&eng.NumBlocks, "num-blocks", eng.NumBlocks, "KV capacity per worker, in blocks")
	fl.IntVar(&maxLoRAs, "max-loras", 0, "LoRA adapter slots per worker: other model names are served as adapters, loaded on first use (0 = base model only)")
	fl.Float64Var(&eng.SpeedupRatio, "speedup-ratio", eng.SpeedupRatio, "workers run this much faster than the modeled GPU (0 = no sleeping)")
	cli.BindEngineTiers(fl, &tiers, &eng)
	cli.BindModelKind(fl, &eng)
	rsc := &sc.Frontend.Router.Selector
	fl.Float64Var(&rsc.HostWeight, "host-weight", rsc.HostWeight, "router: credit per host-tier (G2) cached block beyond the device prefix")
	fl.Float64Var(&rsc.DiskWeight, "disk-weight", rsc.DiskWeight, "router: credit per disk-tier (G3) cached block beyond the device and host prefixes")
	cli.BindTiers(fl, &sc.Frontend.Router)
	cli.BindEnableFeature(fl, &sc.Frontend.Router, "router: ")
	fl.StringArrayVar(&sc.Frontend.APIKeys, "api-key", nil, "require this client API key (repeatable)")
	fl.IntVar(&sc.Frontend.MaxPromptTokens, "max-prompt-tokens", sc.Frontend.MaxPromptTokens, "longest prompt accepted in tokens, 400 beyond (0 = no limit)")
	fl.DurationVar(&sc.Frontend.DrainTimeout, "drain-timeout", sc.Frontend.DrainTimeout, "how long Ctrl-C waits for in-flight streams")
	cli.BindDecisionLog(fl, &sc.Frontend.DecisionLog)
	fl.StringVar(&logLevel, "log-level", "warn", "debug, info, warn or error")
	clihelp.Apply(c, clihelp.Help{Sections: upSections})
	return c
}

// upSections groups up's flags for --help.
var upSections = []clihelp.Section{
	{Name: "Fleet", Shown: "workers disagg speedup-ratio tokenizer", More: "block-size num-blocks max-loras model-kind"},
	{Name: "Router", Shown: "port host policy api-key", More: "index max-prompt-tokens drain-timeout"},
	{Name: "KV tiers", More: "tiers write-through offload-min-reuse host-weight disk-weight shared-weight tier-chains onboard-cost"},
	{Name: "Disaggregated prefill and decode", More: "disagg-policy kv-transfer-bandwidth kv-transfer-latency"},
	{Name: "Experimental", More: "enable-feature peer-hint-min-blocks"},
	{Name: "Logs", Shown: "log-level", More: "decision-log decision-log-sample decision-log-max-bytes decision-log-rate"},
}

// newFleet builds up's fleet (a test sees the config up built).
var newFleet = fleet.New
