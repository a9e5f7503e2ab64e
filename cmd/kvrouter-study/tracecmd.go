package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/spf13/cobra"

	"github.com/kvrouter/kvrouter/internal/traces"
	"github.com/kvrouter/kvrouter/trace"
)

func newTraceCmd() *cobra.Command {
	c := &cobra.Command{Use: "trace", Short: "Generate request traces"}
	c.AddCommand(newTraceSynthCmd())
	return c
}

func newTraceSynthCmd() *cobra.Command {
	cfg := trace.DefaultSynthConfig()
	var (
		out  string
		seed uint64
	)
	c := &cobra.Command{
		Use:   "synth",
		Short: "Generate a synthetic Mooncake trace of conversations with shared system prompts",
		Long: `synth writes a Mooncake-format trace (JSON Lines, gzip when --out ends in .gz)
of conversations (trace.Synth):

  - new conversations arrive as a gamma renewal process: --rate per second,
    coefficient of variation --burstiness (1 = Poisson, > 1 bursty);
  - a conversation starts with one of --systems shared system prompts of
    --system-tokens tokens (probability --prefix-share; popularity Zipf with
    exponent --zipf), or with nothing;
  - each turn's prompt is the whole context so far (system prompt, earlier
    prompts and answers) plus new user tokens, log-normal with median
    --prompt-median and sigma --prompt-sigma; the answer is log-normal
    (--output-median, --output-sigma); the conversation has --turns turns
    on average (geometric) and the next turn arrives an exponential
    --think-time later; a prompt beyond --context-max ends it.

Hash ids name 512-token blocks with their prefix, as in the Mooncake traces.
The same flags and --seed give the same trace. The shipped "synth" trace is
this command's defaults with --seed 1.`,
		Example: `  kvrouter-study trace synth --out synth.jsonl.gz
  kvrouter-study trace synth --requests 10000 --prefix-share 0.9 --turns 1 --burstiness 4 --out bursty.jsonl`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			recs, err := trace.Synth(cfg, rand.New(rand.NewPCG(seed, 0)))
			if err != nil {
				return err
			}
			if out != "" && out != "-" {
				err = traces.WriteFile(out, recs)
			} else {
				err = trace.Write(cmd.OutOrStdout(), recs)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%d requests over %.0fs\n", len(recs), recs[len(recs)-1].Timestamp.Seconds())
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "-", "output file (.gz: gzip); - = stdout")
	f.Uint64Var(&seed, "seed", 1, "random seed")
	f.IntVar(&cfg.Requests, "requests", cfg.Requests, "number of requests")
	f.Float64Var(&cfg.Rate, "rate", cfg.Rate, "new conversations per second (mean)")
	f.Float64Var(&cfg.Burstiness, "burstiness", cfg.Burstiness, "coefficient of variation of conversation inter-arrivals (1 = Poisson)")
	f.IntVar(&cfg.Systems, "systems", cfg.Systems, "number of shared system prompts")
	f.Float64Var(&cfg.ZipfS, "zipf", cfg.ZipfS, "Zipf exponent of system prompt popularity (> 1)")
	f.IntVar(&cfg.SystemTokens, "system-tokens", cfg.SystemTokens, "system prompt length in tokens (whole 512-token blocks)")
	f.Float64Var(&cfg.PrefixShare, "prefix-share", cfg.PrefixShare, "fraction of conversations starting with a shared system prompt")
	f.Float64Var(&cfg.MeanTurns, "turns", cfg.MeanTurns, "mean turns per conversation (geometric, >= 1)")
	f.DurationVar(&cfg.ThinkTime, "think-time", cfg.ThinkTime, "mean time between turns (exponential)")
	f.Float64Var(&cfg.PromptMedian, "prompt-median", cfg.PromptMedian, "median new user tokens per turn (log-normal)")
	f.Float64Var(&cfg.PromptSigma, "prompt-sigma", cfg.PromptSigma, "sigma of new user tokens (log-normal)")
	f.IntVar(&cfg.PromptMax, "prompt-max", cfg.PromptMax, "max new user tokens per turn")
	f.Float64Var(&cfg.OutputMedian, "output-median", cfg.OutputMedian, "median output tokens (log-normal)")
	f.Float64Var(&cfg.OutputSigma, "output-sigma", cfg.OutputSigma, "sigma of output tokens (log-normal)")
	f.IntVar(&cfg.OutputMax, "output-max", cfg.OutputMax, "max output tokens")
	f.IntVar(&cfg.ContextMax, "context-max", cfg.ContextMax, "max prompt tokens (a longer turn ends its conversation)")
	return c
}
