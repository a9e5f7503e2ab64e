package replay

import (
	"context"
	"testing"
	"time"
)

func TestPool(t *testing.T) {
	a := Report{Requests: 2, OK: 2, Seconds: 1, ttfts: []time.Duration{1 * time.Millisecond, 3 * time.Millisecond},
		e2es: []time.Duration{10 * time.Millisecond, 30 * time.Millisecond}, ErrorKinds: map[string]int{}}
	b := Report{Requests: 3, OK: 2, Errors: 1, Seconds: 2, ttfts: []time.Duration{2 * time.Millisecond, 4 * time.Millisecond},
		e2es: []time.Duration{20 * time.Millisecond, 40 * time.Millisecond}, ErrorKinds: map[string]int{"http_503": 1}}
	p := pool([]Report{a, b})
	if p.Requests != 5 || p.OK != 4 || p.Errors != 1 || p.ErrorKinds["http_503"] != 1 || p.Seconds != 3 {
		t.Fatalf("counts: %+v", p)
	}
	if p.TTFT.N != 4 || p.TTFT.P50 != 2 || p.TTFT.Max != 4 || p.E2E.P50 != 20 || p.RequestsPerSec != 4.0/3 {
		t.Fatalf("pooled distribution: ttft %+v e2e %+v rps %v", p.TTFT, p.E2E, p.RequestsPerSec)
	}
}

// TestBenchFrontend runs a tiny bench: every phase completes every request,
// rounds alternate their order and the floor proxy phase is reported.
func TestBenchFrontend(t *testing.T) {
	rep, err := BenchFrontend(context.Background(), BenchConfig{Rate: 200, Duration: 250 * time.Millisecond,
		PromptTokens: 64, MaxTokens: 4, Rounds: 2, Warmup: 50 * time.Millisecond, Floor: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Floor == nil {
		t.Fatal("no floor-proxy report")
	}
	for _, r := range []Report{rep.Direct, rep.Frontend, *rep.Floor} {
		if r.Requests != 100 || r.OK != 100 || r.Errors != 0 || r.TTFT.N != 100 || r.OutputTokens != 400 {
			t.Errorf("%s: %d/%d ok, %d errors %v, %d ttfts, %d output tokens", r.Label, r.OK, r.Requests, r.Errors,
				r.ErrorKinds, r.TTFT.N, r.OutputTokens)
		}
	}
	if len(rep.Frontend.PerWorker) != 1 {
		t.Errorf("frontend phase never named its worker: %v", rep.Frontend.PerWorker)
	}
	if len(rep.PerRound) != 2 || rep.PerRound[0].FrontendFirst || !rep.PerRound[1].FrontendFirst {
		t.Errorf("rounds: %+v", rep.PerRound)
	}
	for i, r := range rep.PerRound {
		if r.FloorTTFTp50 <= 0 || r.FloorTTFTp99 <= 0 {
			t.Errorf("round %d: no frontend/floor ratios: %+v", i, r)
		}
	}
	if v := rep.FloorP50; v == nil || v.Rounds != 2 || v.Goal != FloorGoalP50 || rep.FloorP99 == nil {
		t.Errorf("floor verdicts: %+v %+v", rep.FloorP50, rep.FloorP99)
	}
	if rep.TTFTp50Ratio <= 0 || rep.TTFTp50Ratio != rep.Frontend.TTFT.P50/rep.Direct.TTFT.P50 {
		t.Errorf("ttft p50 ratio %v", rep.TTFTp50Ratio)
	}
}
