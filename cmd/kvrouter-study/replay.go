package main

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/replay"
	"github.com/kvrouter/kvrouter/internal/traces"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/spf13/cobra"
)

func newReplayCmd() *cobra.Command {
	var (
		cfg                        replay.Config
		cmp                        = replay.Compare{Engine: mocker.DefaultConfig()}
		out                        replay.Output
		tracePath, compare         string
		speed, rate, credit, scale float64
		unpaced                    bool
		logLevel                   string
		numBlocks                  int
	)
	c := &cobra.Command{
		Use:   "replay",
		Short: "Replay a Mooncake trace against an OpenAI-compatible endpoint, or compare routing policies",
		Long: `Sends each trace record as a streamed /v1/completions request with synthesized token
ids (hash id h = 512 copies of h), paced by the trace's timestamps divided by --speed
(or --rate requests/s, or --unpaced), and reports TTFT, ITL (each request's mean gap
between tokens) and end-to-end percentiles, throughput, errors, cache hits reported
by the workers and, against kvrouter, the router's hit rate from its /metrics.

With --compare kv,load,round-robin it starts a fresh in-process fleet (embedded NATS,
--workers mockers, router) per policy and replays the same trace against each, back to
back: a table (with ratios to the first policy), --json, and PNG charts in --charts.
The defaults (--limit 600, --speed 8, --speedup-ratio 4) finish in a few minutes on 2 cores.
A policy name with the suffix -nofit (kv-nofit) runs that policy with serve's online
timing fit off (--timing-fit=false); --speedup-ratios 8,8,2,2 gives each worker its own
speed (a mixed fleet, one ratio per worker) to measure what the fit buys.`,
		Example: `  kvrouter-study replay --compare kv,load,round-robin
  kvrouter-study replay --compare kv,kv-nofit,load --speedup-ratios 8,8,2,2
  kvrouter-study replay --url http://127.0.0.1:8080 --trace trace.jsonl --speed 10 --limit 1000`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			recs, err := traces.Load(tracePath)
			if err != nil {
				return err
			}
			cfg.Records = recs
			switch {
			case unpaced:
				cfg.Pacer = replay.Unpaced()
			case rate > 0:
				cfg.Pacer = replay.FixedRate(rate)
			default:
				cfg.Pacer = replay.Recorded(speed)
			}
			if !out.JSON {
				cfg.Progress = cmd.ErrOrStderr()
			}
			ctx := cmd.Context()
			if compare == "" {
				if cfg.URL == "" {
					return errors.New("--url is required (or use --compare)")
				}
				r, err := replay.Run(ctx, cfg)
				if err != nil && len(r.URL) == 0 {
					return err
				}
				if err := out.Write(cmd.OutOrStdout(), cmd.ErrOrStderr(), []replay.Report{r}); err != nil {
					return err
				}
				return ctx.Err()
			}
			if cmp.Arms, err = replay.ParseArms(compare); err != nil {
				return err
			}
			if len(cmp.SpeedupRatios) > 0 && !cmd.Flags().Changed("workers") {
				cmp.Workers = len(cmp.SpeedupRatios)
			}
			if numBlocks > 0 {
				cmp.Engine.NumBlocks = numBlocks
			}
			if logLevel != "" {
				if cmp.Logger, err = app.NewLogger(logLevel); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("overlap-credit") {
				cmp.OverlapCredit = &credit
			}
			if cmd.Flags().Changed("prefill-load-scale") {
				cmp.PrefillLoadScale = &scale
			}
			cmp.Replay, cmp.TraceName, cmp.Output = cfg, filepath.Base(tracePath), out
			return cmp.Run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringVar(&tracePath, "trace", traces.Default, "a shipped trace (conversation, synth, azure-code, azure-conv) or a file (Mooncake JSONL or Azure CSV, plain or gzip)")
	f.StringVar(&cfg.URL, "url", "", "OpenAI-compatible base URL to replay against")
	f.StringVar(&cfg.Model, "model", "kvrouter-mock", "model name sent in requests")
	f.StringVar(&cfg.APIKey, "api-key", "", "bearer token")
	f.IntVar(&cfg.Limit, "limit", 600, "replay only the first N records (0 = the whole trace; the default keeps a run to a few minutes on 2 cores)")
	f.Float64Var(&speed, "speed", 8, "replay the trace's timestamps this many times faster")
	f.Float64Var(&rate, "rate", 0, "send at a fixed rate (requests/s) instead of the timestamps")
	f.BoolVar(&unpaced, "unpaced", false, "send everything at once (bounded by --concurrency)")
	f.IntVar(&cfg.Concurrency, "concurrency", 1024, "max requests in flight")
	f.IntVar(&cfg.MaxOutputTokens, "max-output", 0, "cap output tokens per request (0 = the trace's)")
	f.IntVar(&cfg.VocabSize, "vocab-size", 0, "map token ids into [0, N) for real engines (0 = as synthesized)")
	f.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "per-request timeout")
	f.StringVar(&compare, "compare", "", "policies to compare on fresh in-process fleets, e.g. kv,load,round-robin; suffix -nofit (kv-nofit) = that policy with the router's --timing-fit=false")
	f.IntVar(&cmp.Workers, "workers", 4, "with --compare: mocker workers per fleet")
	f.IntVar(&numBlocks, "num-blocks", 0, "with --compare: KV blocks per worker (0 = mocker default 16384)")
	f.Float64Var(&cmp.Engine.SpeedupRatio, "speedup-ratio", 4, "with --compare: mocker speedup ratio")
	f.Float64SliceVar(&cmp.SpeedupRatios, "speedup-ratios", nil, "with --compare: one mocker speedup ratio per worker, e.g. 8,8,2,2 (overrides --speedup-ratio; sets --workers, which must match if given)")
	f.Float64Var(&credit, "overlap-credit", 1, "with --compare: router overlap credit for every fleet")
	f.StringVar(&cmp.Preset, "preset", "", "with --compare: router cost preset for every fleet: default or dynamo (--overlap-credit and --prefill-load-scale still override)")
	f.Float64Var(&scale, "prefill-load-scale", 1, "with --compare: router prefill load scale for every fleet")
	f.BoolVar(&cmp.Direct, "direct", false, "with --compare: skip NATS (events straight into the router)")
	f.BoolVar(&out.JSON, "json", false, "print the reports as JSON")
	f.StringVar(&out.Charts, "charts", "", "write PNG charts (TTFT CDF, summary) into this directory")
	f.StringVar(&logLevel, "log-level", "", "fleet log level with --compare (default: silent)")
	return c
}
