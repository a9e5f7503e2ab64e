package replay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/mocker"
)

// BenchConfig configures BenchFrontend.
type BenchConfig struct {
	// Rate is the offered load in requests/s. Default 1000.
	Rate float64
	// Duration of each measured phase. Default 10 s.
	Duration time.Duration
	// PromptTokens and MaxTokens shape every request. Defaults 256 and 16.
	PromptTokens, MaxTokens int
	// SpeedupRatio of the mocker (1 = modeled GPU time). Default 20: at 1
	// one mocker cannot prefill 1000 x 256 tokens per second (it saturates
	// near 160 req/s), so both phases would measure its queue, not the
	// frontend.
	SpeedupRatio float64
	// Rounds is the number of measured rounds; each runs one direct and
	// one frontend phase, in alternating order (direct first in odd
	// rounds, frontend first in even ones) so drift and order effects
	// cancel. The report pools every measured round. 0 (the default)
	// chooses the number: rounds run until the verdicts the run judges
	// (against the floor proxy with Floor, else against the direct path)
	// are decided, MinAutoRounds to MaxAutoRounds (StopRounds).
	Rounds int
	// Seed seeds the Poisson arrivals (Poisson; stream r+1 in round r, 0
	// in the warm-up). Default 1.
	Seed uint64
	// Warmup is the length of each phase of an unmeasured first round that
	// warms connections, caches and the heap. Default 2 s; < 0 disables.
	Warmup time.Duration
	// Floor adds a third phase per round through a minimal net/http
	// reverse proxy (read body, forward, copy with a flush per read): the
	// cost of any proxy hop on this machine, to separate the frontend's
	// own overhead from the hop's.
	Floor bool
	// Interleave runs each round's phases at once instead of one after
	// another: one Poisson process of rate Rate whose arrivals are dealt
	// to the targets in turn, so requests alternate between them and a
	// stall of the machine delays every path alike (see benchRounds). The
	// offered load on the mocker stays Rate. Default false (sequential
	// phases at Rate each).
	Interleave bool
	// Progress receives progress bars (nil = none).
	Progress io.Writer
}

// BenchReport compares one mocker called directly with the same mocker
// behind the frontend, under the same offered load.
type BenchReport struct {
	Rate         float64 `json:"rate"`
	Seconds      float64 `json:"seconds_per_phase"`
	PromptTokens int     `json:"prompt_tokens"`
	MaxTokens    int     `json:"max_tokens"`
	SpeedupRatio float64 `json:"speedup_ratio"`
	Direct       Report  `json:"direct"`
	Frontend     Report  `json:"frontend"`
	// Floor is the minimal proxy's report when BenchConfig.Floor is set.
	Floor *Report `json:"floor_proxy,omitempty"`
	// Ratios frontend / direct.
	TTFTp50Ratio float64 `json:"ttft_p50_ratio"`
	TTFTp99Ratio float64 `json:"ttft_p99_ratio"`
	E2Ep50Ratio  float64 `json:"e2e_p50_ratio"`
	E2Ep99Ratio  float64 `json:"e2e_p99_ratio"`
	TTFTp90Ratio float64 `json:"ttft_p90_ratio"`
	// AddedP50 is the frontend's added end-to-end latency at p50, in ms.
	AddedP50 float64 `json:"added_e2e_p50_ms"`
	// AddedTTFTp50 is the frontend's added TTFT at p50, in ms.
	AddedTTFTp50 float64 `json:"added_ttft_p50_ms"`
	// PerRound holds each measured round's TTFT ratios, to show variance.
	PerRound []RoundRatios `json:"per_round"`
	// AutoRounds: the run chose its number of rounds (BenchConfig.Rounds
	// 0); Stopped says why the rounds stopped.
	AutoRounds bool   `json:"auto_rounds,omitempty"`
	Stopped    string `json:"stopped,omitempty"`
	// DirectP50 and DirectP99 judge the frontend's TTFT against the direct
	// path's from the rounds' ratios (Judge): goal DirectGoal.
	DirectP50 *Verdict `json:"direct_verdict_p50,omitempty"`
	DirectP99 *Verdict `json:"direct_verdict_p99,omitempty"`
	// FloorP50 and FloorP99 judge the frontend's TTFT against the floor
	// proxy's from the rounds' ratios (Judge): goals FloorGoalP50 and
	// FloorGoalP99. Set with BenchConfig.Floor.
	FloorP50 *Verdict `json:"floor_verdict_p50,omitempty"`
	FloorP99 *Verdict `json:"floor_verdict_p99,omitempty"`
}

// The frontend's overhead goals: TTFT within 20% of calling the mocker
// directly at 1000 req/s and, against a minimal proxy hop, within 5% at
// p50 and 10% at p99.
const (
	DirectGoal   = 1.2
	FloorGoalP50 = 1.05
	FloorGoalP99 = 1.10
)

// RoundRatios are one round's frontend/direct TTFT ratios.
type RoundRatios struct {
	FrontendFirst bool    `json:"frontend_first"`
	TTFTp50       float64 `json:"ttft_p50"`
	TTFTp90       float64 `json:"ttft_p90"`
	TTFTp99       float64 `json:"ttft_p99"`
	// FloorTTFTp50 and FloorTTFTp99 are frontend / floor proxy (with
	// BenchConfig.Floor).
	FloorTTFTp50 float64 `json:"floor_ttft_p50,omitempty"`
	FloorTTFTp99 float64 `json:"floor_ttft_p99,omitempty"`
	// Interleaved: the round's phases ran at once (BenchConfig.Interleave).
	Interleaved bool `json:"interleaved,omitempty"`
	// Sched is how the process shared the machine per phase (one entry,
	// "all", when interleaved); empty where unavailable.
	Sched []PhaseSched `json:"sched,omitempty"`
}

// BenchFrontend measures the frontend's overhead: a Poisson stream of
// streamed completions against one mocker directly, then through the
// frontend (in-process fleet, events applied directly), alternating.
func BenchFrontend(ctx context.Context, cfg BenchConfig) (BenchReport, error) {
	if cfg.Rate <= 0 {
		cfg.Rate = 1000
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.PromptTokens <= 0 {
		cfg.PromptTokens = 256
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 16
	}
	if cfg.SpeedupRatio == 0 {
		cfg.SpeedupRatio = 20
	}
	if cfg.Rounds < 0 {
		cfg.Rounds = 0
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = 2 * time.Second
	}
	eng := mocker.DefaultConfig()
	eng.SpeedupRatio = cfg.SpeedupRatio
	fc := frontend.DefaultConfig()
	fc.Seed = 1
	f, err := fleet.New(fleet.Config{Workers: 1, Engine: eng, Frontend: fc, Direct: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return BenchReport{}, err
	}
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- f.Run(fctx) }()
	defer func() { stop(); <-done }()
	select {
	case <-f.Ready():
	case err := <-done:
		done <- err
		return BenchReport{}, fmt.Errorf("fleet stopped: %w", err)
	}
	out := BenchReport{Rate: cfg.Rate, Seconds: cfg.Duration.Seconds(), PromptTokens: cfg.PromptTokens,
		MaxTokens: cfg.MaxTokens, SpeedupRatio: cfg.SpeedupRatio}
	// One client for every phase: same transport, same warm connection
	// pool, so the only difference between phases is the frontend hop.
	tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	next := uint64(1 << 20) // distinct prompts: no cache hits in either phase
	targets := []benchTarget{{"direct", f.Workers()[0].URL}, {"frontend", f.URL()}}
	if cfg.Floor {
		u, stopProxy, err := serveFloorProxy(f.Workers()[0].URL)
		if err != nil {
			return out, err
		}
		defer stopProxy()
		targets = append(targets, benchTarget{"floor-proxy", u})
	}
	if cfg.Warmup > 0 {
		for _, t := range targets {
			n := phaseRequests(cfg.Rate, cfg.Warmup)
			if _, err := benchPhase(ctx, cfg, client, t, Poisson(cfg.Rate, n, cfg.Seed, 0), n, &next, "warmup"); err != nil {
				return out, err
			}
		}
	}
	got, rounds, stopped, err := benchRounds(ctx, cfg, client, targets, &next)
	out.PerRound, out.AutoRounds, out.Stopped = rounds, cfg.Rounds == 0, stopped
	if err != nil {
		return out, err
	}
	ds, fs := got["direct"], got["frontend"]
	d50, d99, f50, f99 := benchVerdicts(rounds, cfg.Floor)
	out.DirectP50, out.DirectP99 = &d50, &d99
	if cfg.Floor {
		fl := pool(got["floor-proxy"])
		out.Floor = &fl
		out.FloorP50, out.FloorP99 = &f50, &f99
	}
	out.Direct, out.Frontend = pool(ds), pool(fs)
	d, fe := out.Direct, out.Frontend
	out.TTFTp50Ratio, out.TTFTp90Ratio, out.TTFTp99Ratio = div(fe.TTFT.P50, d.TTFT.P50), div(fe.TTFT.P90, d.TTFT.P90), div(fe.TTFT.P99, d.TTFT.P99)
	out.E2Ep50Ratio, out.E2Ep99Ratio = div(fe.E2E.P50, d.E2E.P50), div(fe.E2E.P99, d.E2E.P99)
	out.AddedP50 = fe.E2E.P50 - d.E2E.P50
	out.AddedTTFTp50 = fe.TTFT.P50 - d.TTFT.P50
	return out, nil
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// pool merges the reports of several runs against the same endpoint into
// one, as if one run (Seconds add up; percentiles over every sample).
func pool(reps []Report) Report {
	if len(reps) == 0 {
		return Report{}
	}
	out := Report{Label: reps[0].Label, URL: reps[0].URL, Pacer: reps[0].Pacer, ErrorKinds: map[string]int{},
		PerWorker: map[string]int{}, RouterHitRate: reps[0].RouterHitRate}
	for i := range reps {
		r := &reps[i]
		out.Requests += r.Requests
		out.OK += r.OK
		out.Errors += r.Errors
		out.Seconds += r.Seconds
		for k, v := range r.ErrorKinds {
			out.ErrorKinds[k] += v
		}
		for k, v := range r.PerWorker {
			out.PerWorker[k] += v
		}
		out.PromptTokens += r.PromptTokens
		out.OutputTokens += r.OutputTokens
		out.CachedTokens += r.CachedTokens
		out.ttfts = append(out.ttfts, r.ttfts...)
		out.itls = append(out.itls, r.itls...)
		out.e2es = append(out.e2es, r.e2es...)
	}
	out.finish()
	return out
}
