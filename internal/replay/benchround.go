package replay

import (
	"context"
	"errors"
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

// benchPhase offers rate req/s of distinct prompts to t for d, the first
// request after delay.
func benchPhase(ctx context.Context, cfg BenchConfig, client *http.Client, t benchTarget, rate float64,
	d time.Duration, next *uint64, delay time.Duration, label string) (Report, error) {
	recs := make([]trace.Record, max(int(rate*d.Seconds()), 1))
	pacer := FixedRate(rate)
	if cfg.Jitter {
		// Seeded by the phase's first prompt id: reproducible, and distinct
		// per target and round.
		pacer = Jittered(rate, time.Duration(float64(time.Second)/cfg.Rate), *next)
	}
	for i := range recs {
		recs[i] = trace.Record{InputLength: cfg.PromptTokens, OutputLength: cfg.MaxTokens, HashIDs: []uint64{*next}}
		*next++
	}
	if delay > 0 {
		tm := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			tm.Stop()
			return Report{}, ctx.Err()
		case <-tm.C:
		}
	}
	return Run(ctx, Config{URL: t.url, Records: recs, Pacer: pacer, TokensPerID: cfg.PromptTokens,
		Progress: cfg.Progress, Label: label, Timeout: time.Minute, Client: client})
}

// benchRounds runs BenchFrontend's measured rounds over targets (direct,
// frontend and optionally floor-proxy) and returns every target's report
// per round, by label, and each round's ratios.
//
// Sequential rounds run one phase per target, the order reversed every
// other round. A machine shared with other work can starve the process for
// seconds (run-queue waits of 3x its CPU time were seen at load 14 on 2
// cores, with TTFT p50 at 100-400 ms in every path, the direct one
// included); such a stall lands in one phase and makes that round's ratios
// meaningless. Interleaved rounds (BenchConfig.Interleave) therefore run
// every target at once, each at Rate/len(targets), started 1/Rate apart so
// that requests alternate between targets: a stall then delays all of them
// alike, and each round's ratios compare paths under one machine state.
func benchRounds(ctx context.Context, cfg BenchConfig, client *http.Client, targets []benchTarget, next *uint64) (map[string][]Report, []RoundRatios, error) {
	got := map[string][]Report{}
	var rounds []RoundRatios
	for round := range cfg.Rounds {
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
		if cfg.Interleave {
			reps := make([]Report, len(order))
			errs := make([]error, len(order))
			recsNext := make([]uint64, len(order))
			for k := range order {
				// Disjoint prompt ids per target, drawn before the start.
				recsNext[k] = *next
				*next += uint64(cfg.Rate*cfg.Duration.Seconds()) + 1
			}
			rate := cfg.Rate / float64(len(order))
			c0, w0, ok := cputime.Sched()
			var wg sync.WaitGroup
			for k, t := range order {
				wg.Add(1)
				go func() {
					defer wg.Done()
					delay := time.Duration(float64(k) / cfg.Rate * float64(time.Second))
					reps[k], errs[k] = benchPhase(ctx, cfg, client, t, rate, cfg.Duration, &recsNext[k], delay, t.label)
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return got, rounds, err
			}
			if c1, w1, ok1 := cputime.Sched(); ok && ok1 {
				sched = append(sched, PhaseSched{Label: "all", CPUSec: (c1 - c0).Seconds(), WaitSec: (w1 - w0).Seconds()})
			}
			for k, t := range order {
				byLabel[t.label] = reps[k]
			}
		} else {
			for _, t := range order {
				c0, w0, ok := cputime.Sched()
				r, err := benchPhase(ctx, cfg, client, t, cfg.Rate, cfg.Duration, next, 0, t.label)
				if err != nil {
					return got, rounds, err
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
	return got, rounds, nil
}
