package replay

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText prints the report as `kvrouter-study bench frontend` does: a
// header line, one row per phase, the frontend/direct (and floor) ratios,
// each round's ratios and scheduling, how the rounds were chosen, then
// the verdicts.
func (rep *BenchReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "offered %.0f req/s for %gs per phase x %d rounds (alternating order, pooled), prompt %d tokens, %d output tokens, mocker speedup %g\n",
		rep.Rate, rep.Seconds, len(rep.PerRound), rep.PromptTokens, rep.MaxTokens, rep.SpeedupRatio)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tok\terr\tttft p50\tttft p90\tttft p99\tttft mean\titl p50\titl p99\te2e p50\te2e p99\t")
	reps := []Report{rep.Direct, rep.Frontend}
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
		r.writeText(w, i+1, rep.Floor != nil)
	}
	if rep.AutoRounds {
		fmt.Fprintf(w, "rounds: %d, chosen by the run (%d to %d, until every verdict it stops on is decided): %s\n",
			len(rep.PerRound), MinAutoRounds, MaxAutoRounds, rep.Stopped)
	}
	for _, v := range []struct {
		v    *Verdict
		what string
	}{{rep.DirectP50, "frontend/direct ttft p50"}, {rep.DirectP99, "frontend/direct ttft p99"},
		{rep.FloorP50, "frontend/floor ttft p50"}, {rep.FloorP99, "frontend/floor ttft p99"}} {
		if v.v != nil {
			v.v.writeText(w, v.what)
		}
	}
	return nil
}

// writeText prints round n's ratios and scheduling on one line.
func (r *RoundRatios) writeText(w io.Writer, n int, floor bool) {
	order := "direct first"
	if r.FrontendFirst {
		order = "frontend first"
	}
	if r.Interleaved {
		order = "interleaved"
	}
	fmt.Fprintf(w, "  round %d (%s): ttft p50 %.3fx p90 %.3fx p99 %.3fx", n, order, r.TTFTp50, r.TTFTp90, r.TTFTp99)
	if floor {
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

// writeText prints the verdict on one line, named what.
func (v *Verdict) writeText(w io.Writer, what string) {
	fmt.Fprintf(w, "%s <= %.2fx: %s over %d rounds (mean %.3fx, 95%% bound %.3f-%.3fx, log spread %.3f; median %.3fx)",
		what, v.Goal, v.Outcome, v.Rounds, v.Mean, v.Low, v.High, v.Spread, v.Median)
	switch {
	case v.Outcome == "undecided" && v.RoundsNeeded > 0:
		fmt.Fprintf(w, "; ~%d rounds would decide it", v.RoundsNeeded)
	case v.Outcome == "undecided":
		fmt.Fprintf(w, "; the mean sits on the goal")
	}
	fmt.Fprintf(w, "; resolving +-%.1f%% takes ~%d rounds\n", 100*(v.Goal-1)/2, v.ResolutionRounds)
}
