package benchindex

import (
	"context"
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/cputime"
)

// TestIdleLookupsAgainstFinalState: the no-writer replay answers every
// lookup from the index holding every event of the stream, as an index
// built directly from the same events does, in both of its passes.
func TestIdleLookupsAgainstFinalState(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Trace, cfg.Workers, cfg.BlockSize, cfg.TokensPerID, cfg.Engine = "synthetic", 4, 4, 8, smallEngine()
	p, err := PrepareRecords(context.Background(), cfg, smallTrace(40))
	if err != nil {
		t.Fatal(err)
	}
	tl := p.Timeline
	ref := indexer.NewFlash(indexer.DefaultFlashConfig())
	for i := range tl.Stream.Events {
		if err := ref.Apply(&tl.Stream.Events[i].Event); err != nil {
			t.Fatal(err)
		}
	}
	want := 0
	for _, l := range tl.Stream.Lookups {
		best := 0
		for _, o := range ref.FindMatches(l.Locals) {
			best = max(best, o.Blocks)
		}
		want += best
	}
	if want == 0 {
		t.Fatal("the reference matched nothing: the test would not see a missing preload")
	}
	f, err := NewShardedTargetFactory(IndexFlash, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	preloaded := 0
	run, err := IdleLookups(context.Background(), tl, f, true, func(n int) { preloaded += n })
	if err != nil {
		t.Fatal(err)
	}
	r, c := run.Wall, run.CPU
	if run.Stalls.ProbeMS < ms(StallProbe) {
		t.Fatalf("stall probe ran %.1f ms, want at least %v", run.Stalls.ProbeMS, StallProbe)
	}
	n := len(tl.Stream.Lookups)
	if r.Lookups != n || r.Events != 0 || r.MeanMatch != float64(want)/float64(n) {
		t.Fatalf("lookups %d events %d mean match %g, want %d lookups, no events, mean %g", r.Lookups, r.Events, r.MeanMatch, n, float64(want)/float64(n))
	}
	// The second pass runs on the same preloaded index (same answers) and
	// alone carries the thread CPU figures; the headline pass has none.
	if c.Lookups != n || c.MeanMatch != r.MeanMatch || r.LookupCPUP50us != 0 || (cputime.Supported && c.LookupCPUP50us <= 0) {
		t.Fatalf("CPU pass: lookups %d mean match %g CPU p50 %g (wall pass CPU p50 %g), want %d, %g, > 0, 0",
			c.Lookups, c.MeanMatch, c.LookupCPUP50us, r.LookupCPUP50us, n, r.MeanMatch)
	}
	if r.IndexBlocks == 0 || c.IndexBlocks != r.IndexBlocks {
		t.Fatalf("index blocks %d then %d, want the same nonzero state", r.IndexBlocks, c.IndexBlocks)
	}
	if len(tl.Stream.Events) > 4096 && preloaded == 0 {
		t.Fatalf("no preload progress over %d events", len(tl.Stream.Events))
	}
}
