package replay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/internal/cputime"
	"github.com/kvrouter/kvrouter/trace"
)

// benchTarget is one endpoint BenchFrontend measures.
type benchTarget struct{ label, url string }

// PhaseSched is how this process shared the machine while phases ran
// (cputime.Sched, Linux): seconds its threads spent on a CPU, and runnable
// but waiting while other processes held the CPUs. A phase whose wait is
// large beside its CPU time was starved: its latencies stalled for reasons
// outside the code under test.
type PhaseSched struct {
	Label   string  `json:"label"` // a target, or "all" for an interleaved round
	CPUSec  float64 `json:"cpu_s"`
	WaitSec float64 `json:"runnable_wait_s"`
}

// benchPhase offers the n requests of pacer (distinct prompts) to t.
func benchPhase(ctx context.Context, cfg BenchConfig, client *http.Client, t benchTarget, pacer Pacer,
	n int, next *uint64, label string) (Report, error) {
	recs := make([]trace.Record, max(n, 1))
	for i := range recs {
		recs[i] = trace.Record{InputLength: cfg.PromptTokens, OutputLength: cfg.MaxTokens, HashIDs: []uint64{*next}}
		*next++
	}
	return Run(ctx, Config{URL: t.url, Records: recs, Pacer: pacer, TokensPerID: cfg.PromptTokens,
		Progress: cfg.Progress, Label: label, Timeout: time.Minute, Client: client})
}

// phaseRequests is the requests of one phase at rate for d.
func phaseRequests(rate float64, d time.Duration) int { return max(int(rate*d.Seconds()), 1) }

// benchRounds runs BenchFrontend's measured rounds over targets (direct,
// frontend and optionally floor-proxy) and returns every target's report
// per round, by label, each round's ratios, and why the rounds stopped.
// cfg.Rounds > 0 runs that many; 0 runs rounds until StopRounds says
// the verdicts (benchVerdicts) are decided.
//
// Arrivals are Poisson (seeded cfg.Seed; stream r+1 in round r, 0 being
// the warm-up's). Sequential rounds run one phase per target, the order
// reversed every other round, every phase of a round on the same arrival
// times: the paths see the same offered pattern, so its randomness
// cancels in the round's ratios. A machine shared with other work can
// starve the process for seconds (run-queue waits of 3x its CPU time were
// seen at load 14 on 2 cores, with TTFT p50 at 100-400 ms in every path,
// the direct one included); such a stall lands in one phase and makes
// that round's ratios meaningless. Interleaved rounds (BenchConfig.
// Interleave) therefore run every target at once on one Poisson process
// of rate Rate, its arrivals dealt to the targets in turn: a stall then
// delays all of them alike, and each round's ratios compare paths under
// one machine state.
func benchRounds(ctx context.Context, cfg BenchConfig, client *http.Client, targets []benchTarget, next *uint64) (map[string][]Report, []RoundRatios, string, error) {
	got := map[string][]Report{}
	var rounds []RoundRatios
	floor := len(targets) > 2
	for round := 0; ; round++ {
		if cfg.Rounds > 0 && round == cfg.Rounds {
			return got, rounds, fmt.Sprintf("%d rounds asked for", cfg.Rounds), nil
		}
		if cfg.Rounds <= 0 {
			d50, d99, f50, f99 := benchVerdicts(rounds, floor)
			vs := []Verdict{d50, d99}
			if floor {
				vs = []Verdict{f50, f99}
			}
			if stop, why := StopRounds(round, vs, !cfg.Interleave); stop {
				return got, rounds, why, nil
			}
		}
		ff := round%2 == 1 // reverse the order every other round
		order := make([]benchTarget, len(targets))
		for k := range targets {
			order[k] = targets[k]
			if ff {
				order[k] = targets[len(targets)-1-k]
			}
		}
		byLabel := map[string]Report{}
		var sched []PhaseSched
		stream := uint64(round) + 1
		if cfg.Interleave {
			reps := make([]Report, len(order))
			errs := make([]error, len(order))
			recsNext := make([]uint64, len(order))
			n := phaseRequests(cfg.Rate, cfg.Duration)
			all := Poisson(cfg.Rate, n, cfg.Seed, stream)
			for k := range order {
				// Disjoint prompt ids per target, drawn before the start.
				recsNext[k] = *next
				*next += uint64(n) + 1
			}
			c0, w0, ok := cputime.Sched()
			var wg sync.WaitGroup
			for k, t := range order {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := all.Every(len(order), k)
					reps[k], errs[k] = benchPhase(ctx, cfg, client, t, p, len(p.times), &recsNext[k], t.label)
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return got, rounds, "", err
			}
			if c1, w1, ok1 := cputime.Sched(); ok && ok1 {
				sched = append(sched, PhaseSched{Label: "all", CPUSec: (c1 - c0).Seconds(), WaitSec: (w1 - w0).Seconds()})
			}
			for k, t := range order {
				byLabel[t.label] = reps[k]
			}
		} else {
			n := phaseRequests(cfg.Rate, cfg.Duration)
			p := Poisson(cfg.Rate, n, cfg.Seed, stream)
			for _, t := range order {
				c0, w0, ok := cputime.Sched()
				r, err := benchPhase(ctx, cfg, client, t, p, n, next, t.label)
				if err != nil {
					return got, rounds, "", err
				}
				if c1, w1, ok1 := cputime.Sched(); ok && ok1 {
					sched = append(sched, PhaseSched{Label: t.label, CPUSec: (c1 - c0).Seconds(), WaitSec: (w1 - w0).Seconds()})
				}
				byLabel[t.label] = r
			}
		}
		for _, t := range targets {
			got[t.label] = append(got[t.label], byLabel[t.label])
		}
		d, fe, fl := byLabel["direct"], byLabel["frontend"], byLabel["floor-proxy"]
		rounds = append(rounds, RoundRatios{FrontendFirst: ff && !cfg.Interleave, Interleaved: cfg.Interleave,
			TTFTp50: div(fe.TTFT.P50, d.TTFT.P50), TTFTp90: div(fe.TTFT.P90, d.TTFT.P90), TTFTp99: div(fe.TTFT.P99, d.TTFT.P99),
			FloorTTFTp50: div(fe.TTFT.P50, fl.TTFT.P50), FloorTTFTp99: div(fe.TTFT.P99, fl.TTFT.P99), Sched: sched})
	}
}

// benchVerdicts judges the rounds' frontend TTFT ratios: against the
// direct path (DirectGoal at p50 and p99) and, with floor, against the
// floor proxy (FloorGoalP50, FloorGoalP99).
func benchVerdicts(rounds []RoundRatios, floor bool) (d50, d99, f50, f99 Verdict) {
	var r50, r99, fl50, fl99 []float64
	for _, r := range rounds {
		r50, r99 = append(r50, r.TTFTp50), append(r99, r.TTFTp99)
		fl50, fl99 = append(fl50, r.FloorTTFTp50), append(fl99, r.FloorTTFTp99)
	}
	d50, d99 = Judge(r50, DirectGoal), Judge(r99, DirectGoal)
	if floor {
		f50, f99 = Judge(fl50, FloorGoalP50), Judge(fl99, FloorGoalP99)
	}
	return d50, d99, f50, f99
}
