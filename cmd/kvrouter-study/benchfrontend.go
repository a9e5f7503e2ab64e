package main

import (
	"os"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/clihelp"
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
		Long: `Starts one mocker and the router frontend in process, then offers the same Poisson
stream of streamed completions (distinct prompts; exponential gaps of mean 1/--rate from a
source seeded --seed) to the mocker directly and through the frontend with one shared HTTP
client: an unmeasured warm-up round, then measured rounds whose phase order alternates, every
phase of a round on the same arrival times. It reports TTFT and end-to-end percentiles
(microsecond resolution) pooled over the rounds, with the ratios frontend/direct, each round's
TTFT ratios, and verdicts from the rounds' spread (one-sided 95% bound on the mean log ratio,
Student t): frontend/direct TTFT <= 1.2x at p50 and p99 and, with --floor, frontend/floor-proxy
<= 1.05x at p50 and <= 1.10x at p99. Evenly spaced arrivals would lock to the mocker's
scheduling passes: the path with the largest hop delay then keeps missing a pass boundary the
others catch, which turned a ~0.1 ms delay into ~0.5 ms at TTFT p50 and flipped the verdict.
--rounds 0 (the default) runs rounds until every verdict it stops on (the floor ones with
--floor, else the direct ones) is decided, 4 to 20 rounds and an even number when sequential,
and prints how many it ran and why it stopped; --rounds N runs N.
--floor adds a third phase through a minimal net/http reverse proxy, which separates the cost
of any proxy hop on this machine from the frontend's own. Each round also reports, per phase,
the process's CPU time and the time its threads were runnable but waiting for a CPU (Linux
schedstat): on a shared machine, a phase whose wait dwarfs its CPU time was starved by other
processes, and every path stalls then (the direct one too). --interleave (the default) runs a
round's phases at once on one Poisson process of rate --rate, its arrivals dealt to the paths in
turn, so a stall delays every path alike instead of landing in one phase: on 2 cores both floor
verdicts were decided in 3 of 3 runs this way, and in none of 3 with --interleave=false
(docs/experiments/overhead.md).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := app.CheckFlagRanges(cmd.Flags(), nil); err != nil {
				return err
			}
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
	f.IntVar(&cfg.Rounds, "rounds", 0, "measured rounds of one phase per path each, order alternating, all pooled (0 = until the verdicts are decided, 4 to 20)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the Poisson arrivals")
	f.DurationVar(&cfg.Warmup, "warmup", 0, "length of each phase of the unmeasured warm-up round (default 2s, negative = none)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.BoolVar(&cfg.Floor, "floor", false, "add a phase through a minimal net/http reverse proxy: the cost of any proxy hop here")
	f.BoolVar(&cfg.Interleave, "interleave", true, "run each round's phases at once, requests alternating between paths (--rate is the total), so a machine stall hits every path alike; =false runs them one after another")
	f.StringVar(&memProf, "memprofile", "", "write an allocation profile (pprof heap, see -sample_index=alloc_space) to this file")
	f.StringVar(&cpuProf, "cpuprofile", "", "write a CPU profile of the whole bench (client, frontend and mocker) to this file")
	// Arrivals are always Poisson now; --jitter randomized evenly spaced
	// ones.
	clihelp.Apply(c, clihelp.Help{Sections: benchFrontendSections, Renamed: map[string]string{"jitter": "seed"}})
	return c
}

// benchFrontendSections groups bench frontend's flags for --help.
var benchFrontendSections = []clihelp.Section{
	{Name: "Load", Shown: "rate duration rounds floor interleave", More: "seed warmup"},
	{Name: "Requests and engine", Shown: "prompt-tokens max-tokens", More: "speedup-ratio"},
	{Name: "Output", Shown: "json", More: "cpuprofile memprofile"},
}
