package benchindex

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/trace"
)

// smallTrace is a synthetic trace with shared prefixes (a few "system
// prompts" followed by private blocks), dense enough in time that a small
// engine must queue, preempt and evict.
func smallTrace(n int) []trace.Record {
	rng := rand.New(rand.NewPCG(7, 7))
	next := uint64(100)
	var recs []trace.Record
	for i := range n {
		ids := []uint64{uint64(i % 3), uint64(10 + i%3)}
		for range 1 + rng.IntN(4) {
			ids = append(ids, next)
			next++
		}
		recs = append(recs, trace.Record{
			Timestamp:    time.Duration(i*40) * time.Millisecond,
			InputLength:  len(ids)*8 - rng.IntN(8),
			OutputLength: 1 + rng.IntN(12),
			HashIDs:      ids,
		})
	}
	return recs
}

func smallEngine() mocker.Config {
	e := mocker.DefaultConfig()
	e.NumBlocks, e.BlockSize, e.MaxNumSeqs, e.MaxNumBatchedTokens = 40, 4, 4, 32
	return e
}

func TestGenerateIsConsistentAndDeterministic(t *testing.T) {
	recs := smallTrace(60)
	opt := GenOptions{Workers: 3, Seed: 9, TokensPerID: 8, Engine: smallEngine(), Parallel: 2}
	s, st, err := Generate(context.Background(), recs, opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if st.Skipped != 0 {
		t.Fatalf("%d requests skipped", st.Skipped)
	}
	// Lookups: one per record, on the worker the seeded partition gives it,
	// with floor(min(input, ids*8) / 4) local hashes.
	assign, _ := trace.Assign(len(recs), 3, rand.New(rand.NewPCG(9, 9^0x9e3779b97f4a7c15)))
	for i, l := range s.Lookups {
		if l.Request != i || l.Worker != assign[i] || l.At != recs[i].Timestamp {
			t.Fatalf("lookup %d: %+v, want worker %d", i, l, assign[i])
		}
		if want := min(recs[i].InputLength, len(recs[i].HashIDs)*8) / 4; len(l.Locals) != want {
			t.Fatalf("lookup %d: %d locals, want %d", i, len(l.Locals), want)
		}
	}
	tl := Merge(s)
	if tl.Stored == 0 || tl.Removed == 0 {
		t.Fatalf("want stores and evictions, got %d stored %d removed", tl.Stored, tl.Removed)
	}
	// The stream is a real engine's: an index fed with it rejects nothing
	// and ends up holding blocks.
	for _, idx := range []indexer.Index{indexer.NewRadix(indexer.RadixConfig{}), indexer.NewFlash(indexer.FlashConfig{})} {
		for i := range s.Events {
			if err := idx.Apply(&s.Events[i].Event); err != nil {
				t.Fatalf("%T: event %d (%v): %v", idx, i, s.Events[i].Event, err)
			}
		}
		if st := idx.Stats(); st.Blocks == 0 || st.Rejected != 0 {
			t.Fatalf("%T: stats %+v", idx, st)
		}
	}
	s2, _, err := Generate(context.Background(), recs, GenOptions{Workers: 3, Seed: 9, TokensPerID: 8, Engine: smallEngine(), Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Lookups, s2.Lookups) || !reflect.DeepEqual(s.Events, s2.Events) {
		t.Fatalf("generation is not deterministic")
	}
}

func TestRunPreparedEndToEnd(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Trace, cfg.Workers, cfg.BlockSize, cfg.TokensPerID, cfg.Engine = "synthetic", 4, 4, 8, smallEngine()
	cfg.Window = time.Millisecond
	p, err := PrepareRecords(context.Background(), cfg, smallTrace(40))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunPrepared(context.Background(), cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Results[0].Index != "radix" || rep.Results[1].Index != "flash" {
		t.Fatalf("results %+v", rep.Results)
	}
	for _, r := range rep.Results {
		// Every event is applied (Finish drains) and none is rejected; both
		// indexes end with the same blocks.
		if r.Rejected != 0 || r.IndexBlocks == 0 || r.IndexBlocks != rep.Results[0].IndexBlocks || r.OpsPerSec <= 0 {
			t.Fatalf("%s: %+v", r.Index, r)
		}
	}
	if rep.Params.Workers != 4 || rep.Params.BlockSize != 4 || rep.Params.Window != "1ms" || rep.Params.GOMAXPROCS == 0 {
		t.Fatalf("params %+v", rep.Params)
	}
}

// Sharding the index by worker changes where events are applied, not what
// the index holds or answers: the same replay against one index and two
// shards (of each kind) ends with the same blocks and match sum.
func TestShardedTargetsAgree(t *testing.T) {
	s, _, err := Generate(context.Background(), smallTrace(60),
		GenOptions{Workers: 5, Seed: 3, TokensPerID: 8, Engine: smallEngine(), Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	tl := Merge(s)
	// Lookups against the final state (preloaded), so that the sums do not
	// depend on the interleaving of the concurrent replay.
	for _, name := range AllIndexes {
		var sums, blocks []int64
		for _, shards := range []int{1, 2} {
			f, err := NewShardedTargetFactory(name, 2, shards)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := Replay(context.Background(), Merge(s.EventsOnly()), f, ReplayOptions{Readers: 2})
			if err != nil || ev.Final.Rejected != 0 || ev.Queued < 0 {
				t.Fatalf("%s shards=%d: events replay: %v, %d rejected", name, shards, err, ev.Final.Rejected)
			}
			lk, err := Replay(context.Background(), Merge(s.LookupsOnly()), WithPreload(f, s.Events), ReplayOptions{Readers: 2})
			if err != nil {
				t.Fatal(err)
			}
			sums = append(sums, lk.MatchSum)
			blocks = append(blocks, int64(ev.Final.Blocks))
		}
		if sums[0] != sums[1] || blocks[0] != blocks[1] || sums[0] == 0 {
			t.Errorf("%s: one index vs two shards: match sums %v, blocks %v (%d entries)", name, sums, blocks, len(tl.Entries))
		}
	}
}
