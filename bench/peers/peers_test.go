package main

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/benchindex"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/trace"
)

// TestKeyMappingAgrees feeds one engine-generated stream to our index and to
// llm-d's (with room for every pod on every key) and checks that every
// query gets the same best prefix depth from both: the event-to-key mapping
// is faithful.
func TestKeyMappingAgrees(t *testing.T) {
	crlog.SetLogger(logr.Discard())
	var recs []trace.Record
	next := uint64(100)
	for i := range 80 {
		ids := []uint64{uint64(i % 4), uint64(10 + i%4)}
		for range 1 + i%5 {
			ids = append(ids, next)
			next++
		}
		recs = append(recs, trace.Record{Timestamp: time.Duration(i*30) * time.Millisecond,
			InputLength: len(ids) * 8, OutputLength: 1 + i%9, HashIDs: ids})
	}
	e := mocker.DefaultConfig()
	e.NumBlocks, e.BlockSize, e.MaxNumSeqs, e.MaxNumBatchedTokens = 48, 4, 4, 32
	s, _, err := benchindex.Generate(context.Background(), recs,
		benchindex.GenOptions{Workers: 5, Seed: 3, TokensPerID: 8, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	f, err := benchindex.NewTargetFactory("flash", 1)
	if err != nil {
		t.Fatal(err)
	}
	pf := benchindex.TargetFactory{Name: "llm-d", New: func() (benchindex.Target, error) {
		return newLLMDTarget(llmdKeys(s), s.Workers, 1, s.Workers)
	}}
	var targets []benchindex.Target
	for _, fac := range []benchindex.TargetFactory{f, pf} {
		tg, err := benchindex.WithPreload(fac, s.Events).New()
		if err != nil {
			t.Fatal(err)
		}
		if err := tg.Start(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		defer tg.Finish(context.Background())
		targets = append(targets, tg)
	}
	removed := 0
	for i := range s.Events {
		removed += len(s.Events[i].Event.Hashes)
	}
	if removed == 0 {
		t.Fatal("stream has no evictions; the test would not cover Evict")
	}
	hits := 0
	for q, l := range s.Lookups {
		a, b := targets[0].Lookup(0, q, l.Locals), targets[1].Lookup(0, q, l.Locals)
		if a != b {
			t.Fatalf("lookup %d: ours %d, llm-d %d", q, a, b)
		}
		hits += a
	}
	if hits == 0 {
		t.Fatal("no lookup matched anything")
	}
}

// TestFixtureScoresAgree: on the 1,000-request agreement fixture
// (benchindex.FixtureTrace, the one the main module's indexes are checked
// on), applied and queried in timeline order, llm-d's index and scorer give
// every pod exactly the score our flash index gives the worker.
func TestFixtureScoresAgree(t *testing.T) {
	crlog.SetLogger(logr.Discard())
	s, _, err := benchindex.Generate(context.Background(), benchindex.FixtureTrace(1000, 16),
		benchindex.GenOptions{Workers: 16, Seed: 3, TokensPerID: benchindex.FixtureTokensPerID, Engine: benchindex.FixtureEngine(), Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	tl := benchindex.Merge(s)
	ours := indexer.NewFlash(indexer.DefaultFlashConfig())
	peer, err := newLLMDTarget(llmdKeys(s), s.Workers, 1, s.Workers)
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for _, e := range tl.Entries {
		if e.Kind == benchindex.OpEvent {
			ev := &s.Events[e.Index].Event
			if err := ours.Apply(ev); err != nil {
				t.Fatalf("event %d: %v", e.Index, err)
			}
			_ = peer.Preload(ev)
			continue
		}
		want := map[string]float64{}
		for _, o := range ours.FindMatches(s.Lookups[e.Index].Locals) {
			want[peer.pods[o.Worker.ID]] = float64(o.Blocks)
		}
		got := map[string]float64{}
		if keys := peer.keys[e.Index]; len(keys) > 0 {
			m, err := peer.idx.Lookup(peer.ctx, keys, noPods)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := peer.scorer.Score(peer.ctx, keys, m)
			if err != nil {
				t.Fatal(err)
			}
			for pod, v := range sc {
				if v > 0 {
					got[pod] = v
				}
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("lookup %d: llm-d %v, ours %v", e.Index, got, want)
		}
		if len(want) > 0 {
			hits++
		}
	}
	if peer.rejected.Load() != 0 || hits < 100 {
		t.Fatalf("llm-d rejected %d events; %d lookups matched", peer.rejected.Load(), hits)
	}
}
