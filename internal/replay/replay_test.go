package replay

import (
	"bytes"
	"context"
	"io"
	"log/slog"
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
	for _, p := range []Pacer{Recorded(0), FixedRate(-1), Jittered(0, time.Millisecond, 1), Jittered(100, -1, 1)} {
		if p.Validate() == nil {
			t.Errorf("%s validated", p)
		}
	}
}

// TestJitteredPacer: request i goes out within [i/rate, i/rate+jitter),
// at offsets spread over the whole window (not one fixed phase), the same
// ones for the same seed and others for another seed.
func TestJitteredPacer(t *testing.T) {
	const n, jitter = 1000, 10 * time.Millisecond
	p, same, other := Jittered(100, jitter, 7), Jittered(100, jitter, 7), Jittered(100, jitter, 8)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	var deciles [10]int
	differ := 0
	for i := range n {
		slot := time.Duration(i) * 10 * time.Millisecond
		at := p.At(i, nil, 0)
		off := at - slot
		if off < 0 || off >= jitter {
			t.Fatalf("At(%d) = %v, outside [%v, %v)", i, at, slot, slot+jitter)
		}
		deciles[off*10/jitter]++
		if same.At(i, nil, 0) != at {
			t.Fatalf("At(%d) differs for the same seed", i)
		}
		if other.At(i, nil, 0) != at {
			differ++
		}
	}
	for k, c := range deciles {
		if c < n/20 { // expected n/10 per decile
			t.Errorf("decile %d of the jitter window holds %d of %d offsets: %v", k, c, n, deciles)
		}
	}
	if differ < n/2 {
		t.Errorf("seeds 7 and 8 gave the same offset for %d of %d requests", n-differ, n)
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
