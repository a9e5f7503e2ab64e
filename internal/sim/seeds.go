package sim

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Spread summarizes one figure over several seeds.
type Spread struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := Spread{Min: xs[0], Max: xs[0]}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	return s
}

// SeedStats is one policy's figures in one cell (trace and load) over
// several seeds.
type SeedStats struct {
	Policy   Policy `json:"policy"`
	P50      Spread `json:"ttft_p50_ms"`
	P99      Spread `json:"ttft_p99_ms"`
	VsPooled Spread `json:"hit_vs_pooled"`
}

// Worse names another policy whose mean beats the target's on a figure,
// and at how many of the seeds the target is worse than it (paired: same
// seed, same requests).
type Worse struct {
	Policy     Policy  `json:"policy"`
	Mean       float64 `json:"mean_ms"`
	WorseSeeds int     `json:"worse_seeds"`
}

// SeedVerdict judges one cell over several seeds. The strict verdict of
// every seed (Judge) is kept as is; the mean verdict asks the same
// question of the means, and a loss on the means counts as seed noise
// when the target is not worse than that policy at every seed.
type SeedVerdict struct {
	Trace  string    `json:"trace"`
	Load   float64   `json:"load"`
	Target Policy    `json:"policy"`
	Seeds  []uint64  `json:"seeds"`
	Strict []Verdict `json:"strict"` // one per seed, in Seeds order
	// StrictPass counts the seeds whose strict verdict passes.
	StrictPass int         `json:"strict_pass"`
	Stats      []SeedStats `json:"stats"` // one per policy, report order
	// WorseP50 and WorseP99 list the policies with a better mean than the
	// target (empty: the target's mean is best, ties included).
	WorseP50 []Worse `json:"worse_p50,omitempty"`
	WorseP99 []Worse `json:"worse_p99,omitempty"`
	OKHit    bool    `json:"ok_hit"` // mean hit ÷ pooled >= MinVsPooled
	// Distinct counts the seeds whose run differs from every earlier
	// seed's in some policy's TTFT p50, p99 or hit ÷ pooled. Without
	// --load-jitter a seed changes only random tie draws, which can leave
	// every seed with the same figures: then "worse at 3/3 seeds" is one
	// run's evidence, and the one-line verdict says so.
	Distinct int `json:"distinct_runs"`
	// Result is "PASS" (best means and hit), "NOISE" (the means lose
	// only to policies the target beats or ties at some seed; hit ok) or
	// "FAIL" (worse than some policy at every seed, or hit too low).
	Result string `json:"result"`
}

// Verdict results of JudgeSeeds.
const (
	SeedPass  = "PASS"
	SeedNoise = "NOISE"
	SeedFail  = "FAIL"
)

// JudgeSeeds judges target over reps, one report per seed of the same
// cell (same policies in the same order). ok is false when a report lacks
// the target or any other policy, or the reports disagree on the policies.
func JudgeSeeds(reps []Report, seeds []uint64, target Policy, traceName string, load float64) (SeedVerdict, bool) {
	if len(reps) == 0 || len(reps) != len(seeds) {
		return SeedVerdict{}, false
	}
	sv := SeedVerdict{Trace: traceName, Load: load, Target: target, Seeds: seeds}
	for i := range reps {
		v, ok := Judge(&reps[i], target, traceName, load)
		if !ok || len(reps[i].Policies) != len(reps[0].Policies) {
			return SeedVerdict{}, false
		}
		sv.Strict = append(sv.Strict, v)
		if v.Pass {
			sv.StrictPass++
		}
	}
	fig := func(k int, get func(*PolicyReport) float64) []float64 {
		xs := make([]float64, len(reps))
		for i := range reps {
			xs[i] = get(&reps[i].Policies[k])
		}
		return xs
	}
	p50 := func(p *PolicyReport) float64 { return p.TTFT.P50 }
	p99 := func(p *PolicyReport) float64 { return p.TTFT.P99 }
	me := -1
	for k, p := range reps[0].Policies {
		for i := range reps {
			if reps[i].Policies[k].Policy != p.Policy {
				return SeedVerdict{}, false
			}
		}
		if p.Policy == target {
			me = k
		}
		sv.Stats = append(sv.Stats, SeedStats{Policy: p.Policy, P50: spreadOf(fig(k, p50)), P99: spreadOf(fig(k, p99)),
			VsPooled: spreadOf(fig(k, func(p *PolicyReport) float64 { return p.VsPooled }))})
	}
	worse := func(get func(*PolicyReport) float64, mean func(*SeedStats) float64) []Worse {
		var out []Worse
		mine := fig(me, get)
		for k := range sv.Stats {
			if k == me || mean(&sv.Stats[k]) >= mean(&sv.Stats[me]) {
				continue
			}
			w := Worse{Policy: sv.Stats[k].Policy, Mean: mean(&sv.Stats[k])}
			for i, x := range fig(k, get) {
				if mine[i] > x {
					w.WorseSeeds++
				}
			}
			out = append(out, w)
		}
		return out
	}
	sv.Distinct = distinctRuns(reps)
	sv.WorseP50 = worse(p50, func(s *SeedStats) float64 { return s.P50.Mean })
	sv.WorseP99 = worse(p99, func(s *SeedStats) float64 { return s.P99.Mean })
	sv.OKHit = sv.Stats[me].VsPooled.Mean >= MinVsPooled
	sv.Result = SeedPass
	if len(sv.WorseP50)+len(sv.WorseP99) > 0 {
		sv.Result = SeedNoise
	}
	for _, w := range slices.Concat(sv.WorseP50, sv.WorseP99) {
		if w.WorseSeeds == len(reps) {
			sv.Result = SeedFail
		}
	}
	if !sv.OKHit {
		sv.Result = SeedFail
	}
	return sv, true
}

// distinctRuns counts the reports whose policies' TTFT p50, p99 and hit ÷
// pooled differ from every earlier report's.
func distinctRuns(reps []Report) int {
	n := 0
	for i := range reps {
		same := false
		for j := range i {
			if sameFigures(&reps[i], &reps[j]) {
				same = true
				break
			}
		}
		if !same {
			n++
		}
	}
	return n
}

func sameFigures(a, b *Report) bool {
	for k := range a.Policies {
		x, y := &a.Policies[k], &b.Policies[k]
		if x.TTFT.P50 != y.TTFT.P50 || x.TTFT.P99 != y.TTFT.P99 || x.VsPooled != y.VsPooled {
			return false
		}
	}
	return true
}

// String is the one-line seed verdict, e.g. "conversation @70%: NOISE
// strict 2/3 (s1 FAIL, s2 PASS, s3 PASS)  p50 kv 195ms > approx 194ms
// (+0.12ms), worse at 1/3 seeds  p99 ok  hit/pooled 0.926 [ok]".
func (sv SeedVerdict) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s @%s: %s  strict %d/%d (", sv.Trace, loadLabel(sv.Load), sv.Result, sv.StrictPass, len(sv.Seeds))
	for i, v := range sv.Strict {
		if i > 0 {
			b.WriteString(", ")
		}
		res := "PASS"
		if !v.Pass {
			res = "FAIL"
		}
		fmt.Fprintf(&b, "s%d %s", sv.Seeds[i], res)
	}
	b.WriteString(")")
	if sv.Distinct < len(sv.Seeds) {
		runs := "runs"
		if sv.Distinct == 1 {
			runs = "run"
		}
		fmt.Fprintf(&b, " [%d distinct %s]", sv.Distinct, runs)
	}
	var me *SeedStats
	for k := range sv.Stats {
		if sv.Stats[k].Policy == sv.Target {
			me = &sv.Stats[k]
		}
	}
	figure := func(name string, mine float64, ws []Worse) {
		if len(ws) == 0 {
			fmt.Fprintf(&b, "  %s ok", name)
			return
		}
		for _, w := range ws {
			fmt.Fprintf(&b, "  %s %s %s > %s %s (+%.2fms), worse at %d/%d seeds", name, sv.Target, ms(mine), w.Policy, ms(w.Mean), mine-w.Mean, w.WorseSeeds, len(sv.Seeds))
		}
	}
	figure("p50", me.P50.Mean, sv.WorseP50)
	figure("p99", me.P99.Mean, sv.WorseP99)
	mark := "ok"
	if !sv.OKHit {
		mark = "NO"
	}
	fmt.Fprintf(&b, "  hit/pooled %.3f [%s]", me.VsPooled.Mean, mark)
	return b.String()
}

// WriteSeedSummary prints, for one trace, each load's and policy's mean
// and range over the seeds, then each load's seed verdict.
func WriteSeedSummary(w io.Writer, traceName string, svs []SeedVerdict) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	seeds := ""
	if len(svs) > 0 {
		seeds = joinSeeds(svs[0].Seeds)
	}
	fmt.Fprintf(tw, "trace %s, seeds %s\tload\tpolicy\tTTFT p50 mean\t[min, max]\tp99 mean\t[min, max]\thit/pooled\t\n", traceName, seeds)
	for _, sv := range svs {
		for _, s := range sv.Stats {
			fmt.Fprintf(tw, "\t%s\t%s\t%s\t[%s, %s]\t%s\t[%s, %s]\t%.3f\t\n", loadLabel(sv.Load), s.Policy,
				ms(s.P50.Mean), ms(s.P50.Min), ms(s.P50.Max), ms(s.P99.Mean), ms(s.P99.Min), ms(s.P99.Max), s.VsPooled.Mean)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, sv := range svs {
		fmt.Fprintln(w, "seed verdict "+sv.String())
	}
	return nil
}

// WriteSeedVerdicts prints every seed verdict, the counts by result and
// the strict count of each seed.
func WriteSeedVerdicts(w io.Writer, svs []SeedVerdict) {
	if len(svs) == 0 {
		return
	}
	seeds := svs[0].Seeds
	count := map[string]int{}
	strict := make([]int, len(seeds))
	var b strings.Builder
	for _, sv := range svs {
		count[sv.Result]++
		for i, v := range sv.Strict {
			if v.Pass && i < len(strict) {
				strict[i]++
			}
		}
		b.WriteString("  " + sv.String() + "\n")
	}
	per := make([]string, len(seeds))
	for i, s := range seeds {
		per[i] = fmt.Sprintf("seed %d: %d", s, strict[i])
	}
	fmt.Fprintf(w, "seed verdicts over seeds %s: %d pass, %d within seed noise, %d fail of %d (means; noise = kv not worse at every seed)\n",
		joinSeeds(seeds), count[SeedPass], count[SeedNoise], count[SeedFail], len(svs))
	fmt.Fprintf(w, "strict verdicts (every seed judged alone): %s of %d pass\n%s", strings.Join(per, ", "), len(svs), b.String())
}

func joinSeeds(seeds []uint64) string {
	s := make([]string, len(seeds))
	for i, x := range seeds {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
