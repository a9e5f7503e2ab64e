package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/kvrouter/kvrouter/internal/replay"
	"github.com/spf13/cobra"
)

func newBenchFrontendCmd() *cobra.Command {
	var (
		cfg    replay.BenchConfig
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "frontend",
		Short: "Measure the router frontend's latency overhead against calling a mocker directly",
		Long: `Starts one mocker and the router frontend in process, then offers the same fixed-rate
stream of streamed completions (distinct prompts) to the mocker directly and through the
frontend, alternating --rounds times, and reports TTFT and end-to-end percentiles of the
last round with the ratios frontend/direct (goal: <= 1.2x at 1000 req/s).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !asJSON {
				cfg.Progress = os.Stderr
			}
			rep, err := replay.BenchFrontend(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			fmt.Printf("offered %.0f req/s for %.0fs per phase, prompt %d tokens, %d output tokens, mocker speedup %g\n",
				rep.Rate, rep.Seconds, rep.PromptTokens, rep.MaxTokens, rep.SpeedupRatio)
			if err := replay.WriteTable(os.Stdout, []replay.Report{rep.Direct, rep.Frontend}); err != nil {
				return err
			}
			fmt.Printf("\nfrontend/direct: ttft p50 %.3fx p99 %.3fx, e2e p50 %.3fx p99 %.3fx (added e2e p50 %.2f ms)\n",
				rep.TTFTp50Ratio, rep.TTFTp99Ratio, rep.E2Ep50Ratio, rep.E2Ep99Ratio, rep.AddedP50)
			return nil
		},
	}
	f := c.Flags()
	f.Float64Var(&cfg.Rate, "rate", 1000, "offered load, requests/s")
	f.DurationVar(&cfg.Duration, "duration", 0, "length of each phase (default 10s)")
	f.IntVar(&cfg.PromptTokens, "prompt-tokens", 256, "prompt length")
	f.IntVar(&cfg.MaxTokens, "max-tokens", 16, "output tokens per request")
	f.Float64Var(&cfg.SpeedupRatio, "speedup-ratio", 20, "mocker speedup ratio (20 lets one mocker sustain 1000 req/s of 256-token prompts)")
	f.IntVar(&cfg.Rounds, "rounds", 2, "alternate direct/frontend phases this many times (last kept)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
