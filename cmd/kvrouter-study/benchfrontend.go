package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"text/tabwriter"

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
			if cpuProf != "" {
				pf, err := os.Create(cpuProf)
				if err != nil {
					return err
				}
				defer pf.Close()
				if err := pprof.StartCPUProfile(pf); err != nil {
					return fmt.Errorf("cpu profile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			rep, err := replay.BenchFrontend(cmd.Context(), cfg)
			if memProf != "" {
				if perr := writeHeapProfile(memProf); perr != nil {
					return perr
				}
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			fmt.Printf("offered %.0f req/s for %.0fs per phase x %d rounds (alternating order, pooled), prompt %d tokens, %d output tokens, mocker speedup %g\n",
				rep.Rate, rep.Seconds, len(rep.PerRound), rep.PromptTokens, rep.MaxTokens, rep.SpeedupRatio)
			return writeBenchFrontend(os.Stdout, &rep)
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

func writeBenchFrontend(w io.Writer, rep *replay.BenchReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tok\terr\tttft p50\tttft p90\tttft p99\tttft mean\titl p50\titl p99\te2e p50\te2e p99\t")
	reps := []replay.Report{rep.Direct, rep.Frontend}
	if rep.Floor != nil {
		reps = append(reps, *rep.Floor)
	}
	for _, r := range reps {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3fms\t%.3fms\t%.3fms\t%.3fms\t%.3fms\t%.3fms\t%.3fms\t%.3fms\t\n", r.Label, r.OK, r.Errors,
			r.TTFT.P50, r.TTFT.P90, r.TTFT.P99, r.TTFT.Mean, r.ITL.P50, r.ITL.P99, r.E2E.P50, r.E2E.P99)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nfrontend/direct: ttft p50 %.3fx p90 %.3fx p99 %.3fx, e2e p50 %.3fx p99 %.3fx (added ttft p50 %.0f us, e2e p50 %.0f us)\n",
		rep.TTFTp50Ratio, rep.TTFTp90Ratio, rep.TTFTp99Ratio, rep.E2Ep50Ratio, rep.E2Ep99Ratio, 1000*rep.AddedTTFTp50, 1000*rep.AddedP50)
	if fl := rep.Floor; fl != nil {
		fmt.Fprintf(w, "floor-proxy/direct: ttft p50 %.3fx p90 %.3fx p99 %.3fx (added ttft p50 %.0f us); frontend beyond the floor: ttft p50 %+.0f us, p99 %+.0f us\n",
			fl.TTFT.P50/rep.Direct.TTFT.P50, fl.TTFT.P90/rep.Direct.TTFT.P90, fl.TTFT.P99/rep.Direct.TTFT.P99,
			1000*(fl.TTFT.P50-rep.Direct.TTFT.P50), 1000*(rep.Frontend.TTFT.P50-fl.TTFT.P50), 1000*(rep.Frontend.TTFT.P99-fl.TTFT.P99))
	}
	for i, r := range rep.PerRound {
		order := "direct first"
		if r.FrontendFirst {
			order = "frontend first"
		}
		if r.Interleaved {
			order = "interleaved"
		}
		fmt.Fprintf(w, "  round %d (%s): ttft p50 %.3fx p90 %.3fx p99 %.3fx", i+1, order, r.TTFTp50, r.TTFTp90, r.TTFTp99)
		if rep.Floor != nil {
			fmt.Fprintf(w, "; frontend/floor p50 %.3fx p99 %.3fx", r.FloorTTFTp50, r.FloorTTFTp99)
		}
		for k, ps := range r.Sched {
			sep := ", "
			if k == 0 {
				sep = "; cpu/runnable-waiting "
			}
			fmt.Fprintf(w, "%s%s %.2f/%.2fs", sep, ps.Label, ps.CPUSec, ps.WaitSec)
		}
		fmt.Fprintln(w)
	}
	for _, v := range []*replay.Verdict{rep.FloorP50, rep.FloorP99} {
		if v == nil {
			continue
		}
		q := "p50"
		if v == rep.FloorP99 {
			q = "p99"
		}
		fmt.Fprintf(w, "frontend/floor ttft %s <= %.2fx: %s over %d rounds (mean %.3fx, 95%% bound %.3f-%.3fx, log spread %.3f; median %.3fx)",
			q, v.Goal, v.Outcome, v.Rounds, v.Mean, v.Low, v.High, v.Spread, v.Median)
		switch {
		case v.Outcome == "undecided" && v.RoundsNeeded > 0:
			fmt.Fprintf(w, "; ~%d rounds would decide it", v.RoundsNeeded)
		case v.Outcome == "undecided":
			fmt.Fprintf(w, "; the mean sits on the goal")
		}
		fmt.Fprintf(w, "; resolving +-%.1f%% takes ~%d rounds\n", 100*(v.Goal-1)/2, v.ResolutionRounds)
	}
	return nil
}

func writeHeapProfile(path string) error {
	pf, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(pf, 0); err != nil {
		pf.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return pf.Close()
}
