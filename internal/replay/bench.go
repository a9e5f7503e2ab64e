package replay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/trace"
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
	// Rounds alternates direct and frontend phases this many times; the
	// report keeps the last round (the first warms caches and
	// connections). Default 2.
	Rounds int
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
	// Ratios frontend / direct.
	TTFTp50Ratio float64 `json:"ttft_p50_ratio"`
	TTFTp99Ratio float64 `json:"ttft_p99_ratio"`
	E2Ep50Ratio  float64 `json:"e2e_p50_ratio"`
	E2Ep99Ratio  float64 `json:"e2e_p99_ratio"`
	// AddedP50 is the frontend's added end-to-end latency at p50, in ms.
	AddedP50 float64 `json:"added_e2e_p50_ms"`
}

// BenchFrontend measures the frontend's overhead: a fixed-rate stream of
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
	if cfg.Rounds <= 0 {
		cfg.Rounds = 2
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
	n := int(cfg.Rate * cfg.Duration.Seconds())
	out := BenchReport{Rate: cfg.Rate, Seconds: cfg.Duration.Seconds(), PromptTokens: cfg.PromptTokens,
		MaxTokens: cfg.MaxTokens, SpeedupRatio: cfg.SpeedupRatio}
	next := uint64(1 << 20) // distinct prompts: no cache hits in either phase
	phase := func(url, label string) (Report, error) {
		recs := make([]trace.Record, n)
		for i := range recs {
			recs[i] = trace.Record{InputLength: cfg.PromptTokens, OutputLength: cfg.MaxTokens, HashIDs: []uint64{next}}
			next++
		}
		return Run(ctx, Config{URL: url, Records: recs, Pacer: FixedRate(cfg.Rate), TokensPerID: cfg.PromptTokens,
			Progress: cfg.Progress, Label: label, Timeout: time.Minute})
	}
	for range cfg.Rounds {
		if out.Direct, err = phase(f.Workers()[0].URL, "direct"); err != nil {
			return out, err
		}
		if out.Frontend, err = phase(f.URL(), "frontend"); err != nil {
			return out, err
		}
	}
	d, fe := out.Direct, out.Frontend
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	out.TTFTp50Ratio, out.TTFTp99Ratio = div(fe.TTFT.P50, d.TTFT.P50), div(fe.TTFT.P99, d.TTFT.P99)
	out.E2Ep50Ratio, out.E2Ep99Ratio = div(fe.E2E.P50, d.E2E.P50), div(fe.E2E.P99, d.E2E.P99)
	out.AddedP50 = fe.E2E.P50 - d.E2E.P50
	return out, nil
}
