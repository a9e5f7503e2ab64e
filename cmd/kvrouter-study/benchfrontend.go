package main

import (
	"os"

	"github.com/kvrouter/kvrouter/internal/profile"
	"github.com/kvrouter/kvrouter/internal/replay"
	"github.com/spf13/cobra"
)

func newBenchFrontendCmd() *cobra.Command {
	var (
		cfg     replay.BenchConfig
		asJSON  bool
		cpuProf string
		memProf string
	)
	c := &cobra.Command{
		Use:   "frontend",
		Short: "Measure the router frontend's latency overhead against calling a mocker directly",
		Long: `Starts one mocker and the router frontend in process, then offers the same fixed-rate
stream of streamed completions (distinct prompts) to the mocker directly and through the
frontend with one shared HTTP client: an unmeasured warm-up round, then --rounds rounds
whose phase order alternates; it reports TTFT and end-to-end percentiles (microsecond
resolution) pooled over the measured rounds, with the ratios frontend/direct
(goal: <= 1.2x at 1000 req/s), and each round's TTFT ratios to show the variance.
With --floor a third phase goes through a minimal net/http reverse proxy, which
separates the cost of any proxy hop on this machine from the frontend's own; the
frontend's TTFT is then judged against the proxy's (goals <= 1.05x at p50, <= 1.10x at p99)
from the per-round ratios: met, missed, or undecided with the rounds a verdict would need.
Each round also reports, per phase, the process's CPU time and the time its threads were
runnable but waiting for a CPU (Linux schedstat): on a shared machine, a phase whose wait
dwarfs its CPU time was starved by other processes, and every path stalls then (the direct
one too). --interleave runs a round's phases at once, each at --rate divided by the number
of paths, started 1/rate apart so that requests alternate: a stall then delays every path
alike instead of landing in one phase. --jitter sends each request at a random point of
its 1/--rate slot: evenly spaced arrivals lock to the mocker's scheduling passes, and the
path with the largest hop delay then keeps missing a pass boundary the others catch, which
magnifies a delay of ~0.1 ms into ~0.5 ms at TTFT p50; with random phases each path's TTFT
grows by its own delay only.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !asJSON {
				cfg.Progress = os.Stderr
			}
			stop, err := profile.StartCPU(cpuProf)
			if err != nil {
				return err
			}
			defer stop()
			rep, err := replay.BenchFrontend(cmd.Context(), cfg)
			if memProf != "" {
				if perr := profile.WriteAllocs(memProf); perr != nil {
					return perr
				}
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return rep.WriteText(cmd.OutOrStdout())
		},
	}
	f := c.Flags()
	f.Float64Var(&cfg.Rate, "rate", 1000, "offered load, requests/s")
	f.DurationVar(&cfg.Duration, "duration", 0, "length of each phase (default 10s)")
	f.IntVar(&cfg.PromptTokens, "prompt-tokens", 256, "prompt length")
	f.IntVar(&cfg.MaxTokens, "max-tokens", 16, "output tokens per request")
	f.Float64Var(&cfg.SpeedupRatio, "speedup-ratio", 20, "mocker speedup ratio (20 lets one mocker sustain 1000 req/s of 256-token prompts)")
	f.IntVar(&cfg.Rounds, "rounds", 2, "measured rounds of one direct and one frontend phase each, order alternating; all pooled")
	f.DurationVar(&cfg.Warmup, "warmup", 0, "length of each phase of the unmeasured warm-up round (default 2s, negative = none)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.BoolVar(&cfg.Floor, "floor", false, "add a phase through a minimal net/http reverse proxy: the cost of any proxy hop here")
	f.BoolVar(&cfg.Jitter, "jitter", false, "send each request at a random point of its 1/--rate slot, so arrivals do not lock to the mocker's scheduling passes")
	f.BoolVar(&cfg.Interleave, "interleave", false, "run each round's phases at once, requests alternating between paths (--rate is the total), so a machine stall hits every path alike")
	f.StringVar(&memProf, "memprofile", "", "write an allocation profile (pprof heap, see -sample_index=alloc_space) to this file")
	f.StringVar(&cpuProf, "cpuprofile", "", "write a CPU profile of the whole bench (client, frontend and mocker) to this file")
	return c
}
