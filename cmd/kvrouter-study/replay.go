package main

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/replay"
	"github.com/kvrouter/kvrouter/internal/traces"
	"github.com/kvrouter/kvrouter/mocker"
)

// replayOptions are replay's flags.
type replayOptions struct {
	cfg                        replay.Config
	cmp                        replay.Compare
	out                        replay.Output
	tracePath, compare         string
	speed, rate, credit, scale float64
	unpaced                    bool
	logLevel                   string
	numBlocks                  int
}

func newReplayCmd() *cobra.Command {
	o := &replayOptions{cmp: replay.Compare{Engine: mocker.DefaultConfig()}}
	c := &cobra.Command{
		Use:     "replay",
		Short:   "Replay a Mooncake trace against an OpenAI-compatible endpoint, or compare routing policies",
		Long:    replayLong,
		Example: replayExample,
		RunE:    o.run,
	}
	bindReplayFlags(c.Flags(), o)
	return c
}

// run replays against --url, or compares the --compare policies on
// fresh fleets.
func (o *replayOptions) run(cmd *cobra.Command, _ []string) error {
	recs, err := traces.Load(o.tracePath)
	if err != nil {
		return err
	}
	o.cfg.Records = recs
	switch {
	case o.unpaced:
		o.cfg.Pacer = replay.Unpaced()
	case o.rate > 0:
		o.cfg.Pacer = replay.FixedRate(o.rate)
	default:
		o.cfg.Pacer = replay.Recorded(o.speed)
	}
	if !o.out.JSON {
		o.cfg.Progress = cmd.ErrOrStderr()
	}
	ctx := cmd.Context()
	if o.compare == "" {
		if o.cfg.URL == "" {
			return errors.New("--url is required (or use --compare)")
		}
		r, err := replay.Run(ctx, o.cfg)
		if err != nil && len(r.URL) == 0 {
			return err
		}
		if err := o.out.Write(cmd.OutOrStdout(), cmd.ErrOrStderr(), []replay.Report{r}); err != nil {
			return err
		}
		return ctx.Err()
	}
	if o.cmp.Arms, err = replay.ParseArms(o.compare); err != nil {
		return err
	}
	if len(o.cmp.SpeedupRatios) > 0 && !cmd.Flags().Changed("workers") {
		o.cmp.Workers = len(o.cmp.SpeedupRatios)
	}
	if o.numBlocks > 0 {
		o.cmp.Engine.NumBlocks = o.numBlocks
	}
	if o.logLevel != "" {
		if o.cmp.Logger, err = app.NewLogger(o.logLevel); err != nil {
			return err
		}
	}
	if cmd.Flags().Changed("overlap-credit") {
		o.cmp.OverlapCredit = &o.credit
	}
	if cmd.Flags().Changed("prefill-load-scale") {
		o.cmp.PrefillLoadScale = &o.scale
	}
	o.cmp.Replay, o.cmp.TraceName, o.cmp.Output = o.cfg, filepath.Base(o.tracePath), o.out
	return o.cmp.Run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
}

// bindReplayFlags binds replay's flags to o.
func bindReplayFlags(f *pflag.FlagSet, o *replayOptions) {
	f.StringVar(&o.tracePath, "trace", traces.Default, "a shipped trace (conversation, synth, azure-code, azure-conv) or a file (Mooncake JSONL or Azure CSV, plain or gzip)")
	f.StringVar(&o.cfg.URL, "url", "", "OpenAI-compatible base URL to replay against")
	f.StringVar(&o.cfg.Model, "model", "kvrouter-mock", "model name sent in requests")
	f.StringVar(&o.cfg.APIKey, "api-key", "", "bearer token")
	f.IntVar(&o.cfg.Limit, "limit", 600, "replay only the first N records (0 = the whole trace; the default keeps a run to a few minutes on 2 cores)")
	f.Float64Var(&o.speed, "speed", 8, "replay the trace's timestamps this many times faster")
	f.Float64Var(&o.rate, "rate", 0, "send at a fixed rate (requests/s) instead of the timestamps")
	f.BoolVar(&o.unpaced, "unpaced", false, "send everything at once (bounded by --concurrency)")
	f.IntVar(&o.cfg.Concurrency, "concurrency", 1024, "max requests in flight")
	f.IntVar(&o.cfg.MaxOutputTokens, "max-output", 0, "cap output tokens per request (0 = the trace's)")
	f.IntVar(&o.cfg.VocabSize, "vocab-size", 0, "map token ids into [0, N) for real engines (0 = as synthesized)")
	f.DurationVar(&o.cfg.Timeout, "timeout", 10*time.Minute, "per-request timeout")
	f.StringVar(&o.compare, "compare", "", "policies to compare on fresh in-process fleets, e.g. kv,load,round-robin; suffix -nofit (kv-nofit) = that policy with the router's --timing-fit=false")
	f.IntVar(&o.cmp.Workers, "workers", 4, "with --compare: mocker workers per fleet")
	f.IntVar(&o.numBlocks, "num-blocks", 0, "with --compare: KV blocks per worker (0 = mocker default 16384)")
	f.Float64Var(&o.cmp.Engine.SpeedupRatio, "speedup-ratio", 4, "with --compare: mocker speedup ratio")
	f.Float64SliceVar(&o.cmp.SpeedupRatios, "speedup-ratios", nil, "with --compare: one mocker speedup ratio per worker, e.g. 8,8,2,2 (overrides --speedup-ratio; sets --workers, which must match if given)")
	f.Float64Var(&o.credit, "overlap-credit", 1, "with --compare: router overlap credit for every fleet")
	f.StringVar(&o.cmp.Preset, "preset", "", "with --compare: router cost preset for every fleet: default or dynamo (--overlap-credit and --prefill-load-scale still override)")
	f.Float64Var(&o.scale, "prefill-load-scale", 1, "with --compare: router prefill load scale for every fleet")
	f.BoolVar(&o.cmp.Direct, "direct", false, "with --compare: skip NATS (events straight into the router)")
	f.BoolVar(&o.out.JSON, "json", false, "print the reports as JSON")
	f.StringVar(&o.out.Charts, "charts", "", "write PNG charts (TTFT CDF, summary) into this directory")
	f.StringVar(&o.logLevel, "log-level", "", "fleet log level with --compare (default: silent)")
}

const replayLong = `Sends each trace record as a streamed /v1/completions request with synthesized token
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
speed (a mixed fleet, one ratio per worker) to measure what the fit buys.`

const replayExample = `  kvrouter-study replay --compare kv,load,round-robin
  kvrouter-study replay --compare kv,kv-nofit,load --speedup-ratios 8,8,2,2
  kvrouter-study replay --url http://127.0.0.1:8080 --trace trace.jsonl --speed 10 --limit 1000`
