package replay

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/trace"
)

func TestPacer(t *testing.T) {
	rec := trace.Record{Timestamp: 3 * time.Second}
	for _, tc := range []struct {
		p    Pacer
		i    int
		want time.Duration
	}{
		{Unpaced(), 5, 0},
		{Recorded(1), 0, 2 * time.Second},
		{Recorded(4), 0, 500 * time.Millisecond},
		{FixedRate(100), 7, 70 * time.Millisecond},
	} {
		if got := tc.p.At(tc.i, &rec, time.Second); got != tc.want {
			t.Errorf("%s At(%d) = %v, want %v", tc.p, tc.i, got, tc.want)
		}
	}
	for _, p := range []Pacer{Recorded(0), FixedRate(-1), Poisson(0, 10, 1, 1), Poisson(-1, 10, 1, 1)} {
		if p.Validate() == nil {
			t.Errorf("%s validated", p)
		}
	}
}

// TestPoissonPacer: the arrivals are a Poisson process of the asked rate
// (a statistical check on one fixed seed: the mean gap, the gaps' spread
// and the share of gaps below the mean match the exponential, which evenly
// spaced arrivals would not), the same for the same seed and stream and
// others for another stream; Every deals them to paths in turn.
func TestPoissonPacer(t *testing.T) {
	const n, rps = 100_000, 1000.0
	p, same, other := Poisson(rps, n, 7, 1), Poisson(rps, n, 7, 1), Poisson(rps, n, 7, 2)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	var sum, sumSq float64
	below, differ := 0, 0
	prev := time.Duration(0)
	mean := 1 / rps // seconds
	for i := range n {
		at := p.At(i, nil, 0)
		if at < prev {
			t.Fatalf("At(%d) = %v before At(%d) = %v", i, at, i-1, prev)
		}
		gap := (at - prev).Seconds()
		prev = at
		sum += gap
		sumSq += gap * gap
		if gap < mean {
			below++
		}
		if same.At(i, nil, 0) != at {
			t.Fatalf("At(%d) differs for the same seed and stream", i)
		}
		if other.At(i, nil, 0) != at {
			differ++
		}
	}
	// Standard errors at n = 1e5: mean gap 0.3%, coefficient of variation
	// about 0.6%, share below the mean 0.15 points; the bounds are 5x
	// those or more.
	m := sum / n
	cv := math.Sqrt(sumSq/n-m*m) / m
	share := float64(below) / n
	if math.Abs(m/mean-1) > 0.02 || math.Abs(cv-1) > 0.05 || math.Abs(share-(1-math.Exp(-1))) > 0.01 {
		t.Errorf("mean gap %.4g s (want %.4g), coefficient of variation %.3f (want 1), share below the mean %.3f (want %.3f)",
			m, mean, cv, share, 1-math.Exp(-1))
	}
	if differ < n/2 {
		t.Errorf("streams 1 and 2 gave the same arrival for %d of %d requests", n-differ, n)
	}
	// Three paths dealt one process: path 1 gets arrivals 1, 4, 7, ...
	e := Poisson(rps, 10, 7, 1).Every(3, 1)
	for i, k := range []int{1, 4, 7} {
		if got, want := e.At(i, nil, 0), p.At(k, nil, 0); got != want {
			t.Errorf("Every(3, 1).At(%d) = %v, want At(%d) = %v", i, got, k, want)
		}
	}
	// Past the drawn arrivals: the path's mean gap, 3 ms.
	if got, want := e.At(4, nil, 0), p.At(7, nil, 0)+2*3*time.Millisecond; got != want {
		t.Errorf("Every(3, 1).At(4) = %v, want %v", got, want)
	}
	if s := e.String(); s != "poisson 1000/s seed 7.1, 1 in 3" {
		t.Errorf("String() = %q", s)
	}
}

func TestSummarize(t *testing.T) {
	var xs []time.Duration
	for i := 1; i <= 100; i++ {
		xs = append(xs, time.Duration(101-i)*time.Millisecond)
	}
	d := Summarize(xs)
	if d.N != 100 || d.P50 != 50 || d.P90 != 90 || d.P99 != 99 || d.Max != 100 || d.Mean != 50.5 {
		t.Errorf("dist %+v", d)
	}
}

// TestCompareSmall replays a tiny trace with shared prefixes against two
// fresh fleets: kv routing must find the shared blocks, round-robin less.
func TestCompareSmall(t *testing.T) {
	var recs []trace.Record
	for i := range 24 {
		// Three conversations of eight turns, each turn extending the last
		// (3 conversations on 4 workers: round-robin scatters them).
		conv := uint64(i % 3)
		var ids []uint64
		for k := 0; k <= i/3+2; k++ {
			ids = append(ids, conv*100+uint64(k))
		}
		recs = append(recs, trace.Record{Timestamp: time.Duration(i) * time.Millisecond, InputLength: len(ids) * 64,
			OutputLength: 4, HashIDs: ids})
	}
	eng := mocker.DefaultConfig()
	eng.NumBlocks, eng.BlockSize, eng.SpeedupRatio = 1024, 16, 0
	var progress bytes.Buffer // not a terminal: plain lines, as in a log
	cmp := Compare{
		Replay:   Config{Records: recs, Pacer: Unpaced(), TokensPerID: 64, Concurrency: 1, Progress: &progress},
		Policies: []router.Policy{router.PolicyKV, router.PolicyRoundRobin},
		Workers:  4, Engine: eng, Direct: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	reps, err := cmp.reports(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	kv, rr := reps[0], reps[1]
	for _, r := range reps {
		if r.OK != 24 || r.Errors != 0 || r.TTFT.N != 24 || r.ITL.N != 24 || r.OutputTokens != 96 {
			t.Fatalf("%s: %+v", r.Label, r)
		}
	}
	// Sequential turns: kv keeps each conversation on one worker, so every
	// turn after the first hits all of its previous blocks.
	if kv.RouterHitRate < 0.5 || kv.WorkerHitRate < 0.5 {
		t.Errorf("kv hit rates router %.2f worker %.2f", kv.RouterHitRate, kv.WorkerHitRate)
	}
	if rr.WorkerHitRate >= kv.WorkerHitRate {
		t.Errorf("round-robin worker hit %.2f >= kv %.2f", rr.WorkerHitRate, kv.WorkerHitRate)
	}
	if p := progress.String(); strings.ContainsAny(p, "\r\x1b") || !strings.Contains(p, "replay round-robin: 24/24 (100%)\n") {
		t.Errorf("progress in a log: %q", p)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, reps); err != nil || !strings.Contains(buf.String(), "round-robin / kv") {
		t.Errorf("table: %v\n%s", err, buf.String())
	}
	dir := t.TempDir()
	paths, err := WriteCharts(dir, reps)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 || filepath.Dir(p) != dir {
			t.Errorf("chart %s: %v", p, err)
		}
	}
}
