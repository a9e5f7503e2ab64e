package benchindex

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/trace"
)

func TestScale(t *testing.T) {
	recs := []trace.Record{
		{Timestamp: 0, InputLength: 20, HashIDs: []uint64{0, 1, 2}},
		{Timestamp: 5 * time.Millisecond, InputLength: 10, HashIDs: []uint64{0, 3}},
	}
	if same, err := Scale(recs, 1, 1); err != nil || len(same) != 2 || &same[0] != &recs[0] {
		t.Fatalf("1x1 must return the input: %v", err)
	}
	out, err := Scale(recs, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 6 {
		t.Fatalf("%d records, want 6", len(out))
	}
	// Interleaved in time: the three copies of record 0, then of record 1.
	for i, r := range out {
		if want := recs[i/3].Timestamp; r.Timestamp != want {
			t.Fatalf("record %d at %v, want %v", i, r.Timestamp, want)
		}
		if r.InputLength != 2*recs[i/3].InputLength || len(r.HashIDs) != 2*len(recs[i/3].HashIDs) {
			t.Fatalf("record %d: input %d, %d ids", i, r.InputLength, len(r.HashIDs))
		}
	}
	// Copies are disjoint; within a copy the shared prefix (id 0) stays
	// shared and is extended to 2 ids.
	seen := map[uint64]int{}
	for i, r := range out {
		for _, h := range r.HashIDs {
			if c, ok := seen[h]; ok && c != i%3 {
				t.Fatalf("id %d in copies %d and %d", h, c, i%3)
			}
			seen[h] = i % 3
		}
	}
	for c := range 3 {
		a, b := out[c].HashIDs, out[3+c].HashIDs
		if !slices.Equal(a[:2], b[:2]) || a[2] == b[2] {
			t.Fatalf("copy %d: prefixes %v / %v: want 2 shared ids then a difference", c, a, b)
		}
	}
	if _, err := Scale([]trace.Record{{HashIDs: []uint64{math.MaxUint64 / 2}}}, 4, 1); err == nil {
		t.Fatal("overflowing ids accepted")
	}
}

// TestBisect drives the search logic with a fake step that sustains every
// rate up to a capacity: the search must bracket it within 5%.
func TestBisect(t *testing.T) {
	tl := Merge(synthetic())
	for _, capacity := range []float64{7.3e6, 1e6, 40e6, 123} {
		for _, start := range []float64{1e6, 5e7} {
			var rates []float64
			step := func(rate float64) (Result, error) {
				rates = append(rates, rate)
				ok := rate <= capacity
				return Result{WindowMS: 1, OfferedBlockOpsPerSec: rate, Valid: true, Issued: true, KeptUp: ok}, nil
			}
			opt := SearchOptions{MaxSteps: 40}
			opt.defaults()
			steps, best, found, err := bisect(start, opt, tl, step)
			if err != nil || !found {
				t.Fatalf("capacity %g start %g: found %v err %v", capacity, start, found, err)
			}
			if best.OfferedBlockOpsPerSec > capacity || best.OfferedBlockOpsPerSec < capacity/1.05 {
				t.Fatalf("capacity %g start %g: sustained %g (rates %v)", capacity, start, best.OfferedBlockOpsPerSec, rates)
			}
			// It stopped because a failed rate is within 5% above.
			minFail := math.Inf(1)
			for _, r := range steps {
				if !r.Sustains() {
					minFail = min(minFail, r.OfferedBlockOpsPerSec)
				}
			}
			if minFail > best.OfferedBlockOpsPerSec*1.05 {
				t.Fatalf("capacity %g start %g: stopped at %g with lowest failure %g", capacity, start, best.OfferedBlockOpsPerSec, minFail)
			}
		}
	}
	// Nothing sustained: the search halves until MaxSteps, found = false.
	opt := SearchOptions{MaxSteps: 5}
	opt.defaults()
	steps, _, found, _ := bisect(1e6, opt, tl, func(rate float64) (Result, error) {
		return Result{WindowMS: 1, OfferedBlockOpsPerSec: rate}, nil
	})
	if found || len(steps) != 5 || steps[4].OfferedBlockOpsPerSec != 1e6/16 {
		t.Fatalf("found %v after %d steps", found, len(steps))
	}
}

func TestRunPreparedAutoSearch(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Trace, cfg.Workers, cfg.BlockSize, cfg.TokensPerID, cfg.Engine = "synthetic", 4, 4, 8, smallEngine()
	cfg.Indexes, cfg.Repeat = []string{IndexFlash}, 2
	p, err := PrepareRecords(context.Background(), cfg, smallTrace(40))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunPrepared(context.Background(), cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	ss := rep.Searches[IndexFlash]
	if len(ss) != 2 || len(rep.Summaries) != 1 || len(rep.Summaries[0].Rates) != 2 || len(rep.Results) != 1 {
		t.Fatalf("searches %d, summaries %+v", len(ss), rep.Summaries)
	}
	if len(rep.Idle) != 1 || rep.Idle[0].Index != IndexFlash || rep.Idle[0].Events != 0 || rep.Idle[0].Lookups != p.Generation.Lookups {
		t.Fatalf("no-writer replays %+v", rep.Idle)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "flash  no writers (every event preloaded") {
		t.Fatalf("report without the no-writer line:\n%s", text.String())
	}
	for _, s := range ss {
		if s.Capacity.WindowMS != 0 || s.Capacity.BlockOpsPerSec <= 0 || len(s.Steps) == 0 {
			t.Fatalf("search %+v", s)
		}
		// The offered rate is the block ops over the paced window, which
		// is rounded to whole units of time: equal to half within 1%.
		if half := s.Sustained.OfferedBlockOpsPerSec / 2; s.Found && math.Abs(s.Half.OfferedBlockOpsPerSec-half) > 0.01*half {
			t.Fatalf("half step at %g, sustained %g", s.Half.OfferedBlockOpsPerSec, s.Sustained.OfferedBlockOpsPerSec)
		}
	}
}

// TestFixtureScoresAgree: on the 1,000-request fixture's timeline, applied
// and queried in order, radix, flash and their sharded forms return
// identical per-worker scores for every lookup.
func TestFixtureScoresAgree(t *testing.T) {
	recs := FixtureTrace(1000, 16)
	s, _, err := Generate(context.Background(), recs,
		GenOptions{Workers: 16, Seed: 3, TokensPerID: FixtureTokensPerID, Engine: FixtureEngine(), Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	tl := Merge(s)
	if tl.Removed == 0 || tl.Lookups != 1000 {
		t.Fatalf("fixture: %d lookups, %d removed events: want 1000 and evictions", tl.Lookups, tl.Removed)
	}
	fc, rc := indexer.DefaultFlashConfig(), indexer.DefaultRadixConfig()
	idx := map[string]indexer.Index{
		"radix":     indexer.NewRadix(rc),
		"flash":     indexer.NewFlash(fc),
		"sharded-4": indexer.NewSharded(4, func() indexer.Index { return indexer.NewFlash(fc) }),
		"radix-3":   indexer.NewSharded(3, func() indexer.Index { return indexer.NewRadix(rc) }),
	}
	names := []string{"radix", "flash", "sharded-4", "radix-3"}
	hits := 0
	for _, e := range tl.Entries {
		if e.Kind == OpEvent {
			for _, n := range names {
				if err := idx[n].Apply(&s.Events[e.Index].Event); err != nil {
					t.Fatalf("%s: event %d: %v", n, e.Index, err)
				}
			}
			continue
		}
		locals := s.Lookups[e.Index].Locals
		want := idx["radix"].FindMatches(locals)
		for _, n := range names[1:] {
			if got := idx[n].FindMatches(locals); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("lookup %d: %s %v, radix %v", e.Index, n, got, want)
			}
		}
		if len(want) > 0 {
			hits++
		}
	}
	if hits < 100 {
		t.Fatalf("only %d of 1000 lookups matched anything", hits)
	}
}
