package sim

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// MinVsPooled is the hit rate, as a fraction of the pooled-cache bound,
// that the kv policy must reach to pass a verdict.
const MinVsPooled = 0.9

// NoiseTolerance is how much worse than the best other policy, as a
// fraction of that policy's figure, the target's TTFT p50 or p99 may be in
// one run for the loss to count as seed noise rather than a failure.
// Measured: over seeds 1-3 at 0.999 and 1.001 times the trace's rate,
// each policy's TTFT p50 spans up to 1.2% of its mean and p99 up to 3.3%
// (one 6.9%) on azure-code, azure-conv and synth. One run cannot tell a
// smaller loss from chance; --seeds (JudgeSeeds) measures it instead.
const NoiseTolerance = 0.02

// Verdict answers, for one report (one trace at one load): does the
// target policy have the best TTFT p50 AND p99 of all policies in the
// report, and a hit rate >= MinVsPooled of the pooled-cache bound? A
// verdict that fails only by TTFT losses within NoiseTolerance is NOISE,
// not FAIL.
type Verdict struct {
	Trace  string  `json:"trace"`
	Load   float64 `json:"load"` // fraction of capacity; 0 = the trace's own rate
	Target Policy  `json:"policy"`
	// P50, P99 and VsPooled are the target's figures; BestP50By and
	// BestP99By name the best other policy and its figure.
	P50       float64 `json:"ttft_p50_ms"`
	P99       float64 `json:"ttft_p99_ms"`
	VsPooled  float64 `json:"hit_vs_pooled"`
	BestP50By Policy  `json:"best_other_p50_policy"`
	BestP50   float64 `json:"best_other_p50_ms"`
	BestP99By Policy  `json:"best_other_p99_policy"`
	BestP99   float64 `json:"best_other_p99_ms"`
	OKP50     bool    `json:"ok_p50"`
	OKP99     bool    `json:"ok_p99"`
	OKHit     bool    `json:"ok_hit"`
	Pass      bool    `json:"pass"` // strict: best p50 and p99 (ties count) and hit ok
	// Result is "PASS" (Pass), "NOISE" (not Pass, hit ok, and every TTFT
	// figure within NoiseTolerance of the best other's) or "FAIL".
	Result string `json:"result"`
}

// Verdict results of Judge, as JudgeSeeds's.
const (
	VerdictPass  = SeedPass
	VerdictNoise = SeedNoise
	VerdictFail  = SeedFail
)

// withinNoise reports whether mine loses to best by at most
// NoiseTolerance of best.
func withinNoise(mine, best float64) bool { return mine <= best*(1+NoiseTolerance) }

// Judge returns the verdict of target in rep (ok false when the report
// lacks target or any other policy). Ties count as best.
func Judge(rep *Report, target Policy, traceName string, load float64) (Verdict, bool) {
	me := rep.Policy(target)
	if me == nil || len(rep.Policies) < 2 {
		return Verdict{}, false
	}
	v := Verdict{Trace: traceName, Load: load, Target: target, P50: me.TTFT.P50, P99: me.TTFT.P99, VsPooled: me.VsPooled}
	first := true
	for i := range rep.Policies {
		p := &rep.Policies[i]
		if p.Policy == target {
			continue
		}
		if first || p.TTFT.P50 < v.BestP50 {
			v.BestP50, v.BestP50By = p.TTFT.P50, p.Policy
		}
		if first || p.TTFT.P99 < v.BestP99 {
			v.BestP99, v.BestP99By = p.TTFT.P99, p.Policy
		}
		first = false
	}
	v.OKP50 = v.P50 <= v.BestP50
	v.OKP99 = v.P99 <= v.BestP99
	v.OKHit = v.VsPooled >= MinVsPooled
	v.Pass = v.OKP50 && v.OKP99 && v.OKHit
	switch {
	case v.Pass:
		v.Result = VerdictPass
	case v.OKHit && withinNoise(v.P50, v.BestP50) && withinNoise(v.P99, v.BestP99):
		v.Result = VerdictNoise
	default:
		v.Result = VerdictFail
	}
	return v, true
}

// String is the one-line verdict, e.g. "azure-conv @trace rate: NOISE
// kv p50 30.6ms vs load 30.5ms [+0.3%, noise]  p99 93.1ms vs approx
// 93.2ms [ok]  hit/pooled 0.993 [ok]".
func (v Verdict) String() string {
	mark := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "NO"
	}
	loss := func(ok bool, mine, best float64) string {
		if ok || !withinNoise(mine, best) {
			return mark(ok)
		}
		return fmt.Sprintf("+%.1f%%, noise", 100*(mine/best-1))
	}
	res := v.Result
	if res == "" { // a Verdict built by hand
		res = VerdictFail
		if v.Pass {
			res = VerdictPass
		}
	}
	return fmt.Sprintf("%s @%s: %s  %s p50 %s vs %s %s [%s]  p99 %s vs %s %s [%s]  hit/pooled %.3f [%s]",
		v.Trace, loadLabel(v.Load), res, v.Target,
		ms(v.P50), v.BestP50By, ms(v.BestP50), loss(v.OKP50, v.P50, v.BestP50),
		ms(v.P99), v.BestP99By, ms(v.BestP99), loss(v.OKP99, v.P99, v.BestP99),
		v.VsPooled, mark(v.OKHit))
}

func loadLabel(load float64) string {
	if load <= 0 {
		return "trace rate"
	}
	return fmt.Sprintf("%.0f%%", 100*load)
}

// WriteSummary prints, for one trace, one row per load and policy with
// TTFT p50 / p99 and hit rate ÷ pooled bound, each load followed by its
// verdict line. loads[i] is reps[i]'s fraction of capacity (0: the trace's
// own rate).
func WriteSummary(w io.Writer, traceName string, loads []float64, reps []Report, target Policy) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "trace %s\tload\tpolicy\tTTFT p50\tp99\thit/pooled\t\n", traceName)
	for i := range reps {
		for _, p := range reps[i].Policies {
			fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t%.3f\t\n", loadLabel(loads[i]), p.Policy, ms(p.TTFT.P50), ms(p.TTFT.P99), p.VsPooled)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i := range reps {
		if v, ok := Judge(&reps[i], target, traceName, loads[i]); ok {
			fmt.Fprintln(w, "verdict "+v.String())
		}
	}
	return nil
}

// WriteVerdicts prints every verdict and the counts that pass and that
// lose within noise.
func WriteVerdicts(w io.Writer, vs []Verdict) {
	pass, noise := 0, 0
	var b strings.Builder
	for _, v := range vs {
		switch {
		case v.Pass:
			pass++
		case v.Result == VerdictNoise:
			noise++
		}
		b.WriteString("  " + v.String() + "\n")
	}
	fmt.Fprintf(w, "verdicts: %d of %d pass, %d within noise (kv best TTFT p50 and p99 of all policies, hit >= %.1f of pooled; noise: a loss under %.0f%% of the best other's figure)\n%s",
		pass, len(vs), noise, MinVsPooled, 100*NoiseTolerance, b.String())
}
