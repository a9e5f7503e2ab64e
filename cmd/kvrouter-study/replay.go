package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/internal/replay"
	"github.com/kvrouter/kvrouter/internal/traces"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"github.com/spf13/cobra"
)

func newReplayCmd() *cobra.Command {
	var (
		cfg                         replay.Config
		tracePath, compare, preset  string
		speed, rate                 float64
		unpaced, asJSON             bool
		chartDir, logLevel          string
		workers, numBlocks          int
		speedupRatio, credit, scale float64
		direct                      bool
		speedupRatios               []float64
	)
	c := &cobra.Command{
		Use:   "replay",
		Short: "Replay a Mooncake trace against an OpenAI-compatible endpoint, or compare routing policies",
		Long: `Sends each trace record as a streamed /v1/completions request with synthesized token
ids (hash id h = 512 copies of h), paced by the trace's timestamps divided by --speed
(or --rate requests/s, or --unpaced), and reports TTFT, ITL and end-to-end percentiles,
throughput, errors, cache hits reported by the workers and, against kvrouter, the
router's hit rate from its /metrics.

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
			if _, err := router.Preset(preset); preset != "" && err != nil {
				return err
			}
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
			if !asJSON {
				cfg.Progress = os.Stderr
			}
			ctx := cmd.Context()
			var reps []replay.Report
			if compare != "" {
				arms, err := replay.ParseArms(compare)
				if err != nil {
					return err
				}
				if len(speedupRatios) > 0 && !cmd.Flags().Changed("workers") {
					workers = len(speedupRatios)
				}
				eng := mocker.DefaultConfig()
				eng.SpeedupRatio = speedupRatio
				if numBlocks > 0 {
					eng.NumBlocks = numBlocks
				}
				var log = discardLogger()
				if logLevel != "" {
					if log, err = app.NewLogger(logLevel); err != nil {
						return err
					}
				}
				speeds := fmt.Sprint(speedupRatio)
				if len(speedupRatios) > 0 {
					speeds = fmt.Sprint(speedupRatios)
				}
				var names []string
				for _, a := range arms {
					names = append(names, a.Name)
				}
				fmt.Fprintf(os.Stderr, "comparing %v: %d requests of %s, %s, %d workers (speedup %s, %d blocks each)\n",
					names, min(cfg.Limit, len(recs)), filepath.Base(tracePath), cfg.Pacer, workers, speeds, eng.NumBlocks)
				reps, err = replay.Compare(ctx, replay.CompareConfig{Replay: cfg, Arms: arms, Workers: workers,
					SpeedupRatios: speedupRatios, Engine: eng, Direct: direct, Logger: log,
					Frontend: func(fc *frontend.Config) {
						if preset != "" {
							rc, _ := router.Preset(preset) // validated below RunE's start
							fc.Router.Selector, fc.Router.Predict = rc.Selector, rc.Predict
						}
						if cmd.Flags().Changed("overlap-credit") {
							fc.Router.Selector.OverlapCredit = credit
						}
						if cmd.Flags().Changed("prefill-load-scale") {
							fc.Router.Selector.PrefillLoadScale = scale
						}
					},
					OnReport: func(r replay.Report) {
						if !asJSON {
							fmt.Fprintln(os.Stderr, r.String())
						}
					}})
				if err != nil {
					return err
				}
			} else {
				if cfg.URL == "" {
					return errors.New("--url is required (or use --compare)")
				}
				r, err := replay.Run(ctx, cfg)
				if err != nil && len(r.URL) == 0 {
					return err
				}
				reps = []replay.Report{r}
			}
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), reps); err != nil {
					return err
				}
			} else if err := replay.WriteTable(os.Stdout, reps); err != nil {
				return err
			}
			if chartDir != "" {
				if err := os.MkdirAll(chartDir, 0o755); err != nil {
					return err
				}
				paths, err := replay.WriteCharts(chartDir, reps)
				if err != nil {
					return err
				}
				for _, p := range paths {
					fmt.Fprintln(os.Stderr, "wrote", p)
				}
			}
			return ctx.Err()
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
	f.IntVar(&workers, "workers", 4, "with --compare: mocker workers per fleet")
	f.IntVar(&numBlocks, "num-blocks", 0, "with --compare: KV blocks per worker (0 = mocker default 16384)")
	f.Float64Var(&speedupRatio, "speedup-ratio", 4, "with --compare: mocker speedup ratio")
	f.Float64SliceVar(&speedupRatios, "speedup-ratios", nil, "with --compare: one mocker speedup ratio per worker, e.g. 8,8,2,2 (overrides --speedup-ratio; sets --workers, which must match if given)")
	f.Float64Var(&credit, "overlap-credit", 1, "with --compare: router overlap credit for every fleet")
	f.StringVar(&preset, "preset", "", "with --compare: router cost preset for every fleet: default or dynamo (--overlap-credit and --prefill-load-scale still override)")
	f.Float64Var(&scale, "prefill-load-scale", 1, "with --compare: router prefill load scale for every fleet")
	f.BoolVar(&direct, "direct", false, "with --compare: skip NATS (events straight into the router)")
	f.BoolVar(&asJSON, "json", false, "print the reports as JSON")
	f.StringVar(&chartDir, "charts", "", "write PNG charts (TTFT CDF, summary) into this directory")
	f.StringVar(&logLevel, "log-level", "", "fleet log level with --compare (default: silent)")
	return c
}
