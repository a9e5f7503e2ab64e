package indexer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// TestApproxDifferential replays seeded random inserts (shared prefixes,
// refreshes at the same and at later instants, size-bound pruning, worker
// removal) into Approx and into refApprox, the FIFO implementation it
// replaced, and requires equal matches and stats after every operation,
// through both the local-hash and the sequence-hash entry points, with
// and without a shared system prompt (shared blocks before every prompt's
// own). Prompts are chains, so an Insert takes pairs over from the start
// of older generations' lists, which leaves nothing to compact
// (approxgen.go).
func TestApproxDifferential(t *testing.T) {
	for _, tc := range []struct {
		ttl       time.Duration
		maxBlocks int
		prune     float64
		shared    int
	}{
		{ttl: 10 * time.Second, maxBlocks: 1 << 20, prune: 0.8},
		{ttl: 10 * time.Second, maxBlocks: 40, prune: 0.5},
		{ttl: 3 * time.Second, maxBlocks: 25, prune: 0.8},
		{ttl: 10 * time.Second, maxBlocks: 1 << 20, prune: 0.8, shared: 40},
		{ttl: 10 * time.Second, maxBlocks: 300, prune: 0.5, shared: 40},
	} {
		var compacted uint64
		for seed := range uint64(20) {
			t.Run(fmt.Sprintf("ttl=%v/max=%d/shared=%d/seed=%d", tc.ttl, tc.maxBlocks, tc.shared, seed), func(t *testing.T) {
				cfg := ApproxConfig{TTL: tc.ttl, MaxBlocks: tc.maxBlocks, PruneFraction: tc.prune}
				compacted += approxDifferential(t, cfg, tc.shared, rand.New(rand.NewPCG(seed, 16)))
			})
		}
		if compacted != 0 {
			// Chains are taken over from their lists' starts.
			t.Errorf("ttl=%v/max=%d/shared=%d: %d stale items compacted", tc.ttl, tc.maxBlocks, tc.shared, compacted)
		}
	}
}

// approxDifferential runs one replay and returns the stale items Approx
// compacted away.
func approxDifferential(t *testing.T, cfg ApproxConfig, shared int, rng *rand.Rand) uint64 {
	a, ref := NewApprox(cfg), newRefApprox(cfg)
	// Prompts over a 3-letter alphabet share prefixes often.
	prompt := func() []uint64 {
		p := make([]uint64, shared, shared+10)
		for i := range p {
			p[i] = uint64(100 + i)
		}
		for range 1 + rng.IntN(10) {
			p = append(p, uint64(1+rng.IntN(3)))
		}
		return p
	}
	now := time.Unix(1000, 0)
	for step := range 400 {
		switch op := rng.IntN(20); {
		case op < 11:
			if rng.IntN(3) > 0 {
				now = now.Add(time.Duration(rng.Int64N(int64(cfg.TTL) / 4)))
			}
			w := kvevents.Worker{ID: uint64(1 + rng.IntN(5)), Rank: uint32(rng.IntN(2))}
			p := prompt()
			ref.Insert(w, p, now)
			if rng.IntN(2) == 0 {
				a.Insert(w, p, now)
			} else {
				a.InsertSeq(w, kvhash.SeqHashes(p), now)
			}
		case op < 19:
			p := prompt()
			at := now.Add(time.Duration(rng.Int64N(int64(cfg.TTL))))
			want := ref.FindMatches(p, at)
			got := a.FindMatches(p, at)
			if rng.IntN(2) == 0 {
				got = a.AppendMatchesSeq(nil, kvhash.SeqHashes(p), at)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: match %v at %v: got %v, want %v", step, p, at.Sub(time.Unix(1000, 0)), got, want)
			}
		default:
			id := uint64(1 + rng.IntN(5))
			a.RemoveWorker(id)
			ref.RemoveWorker(id)
		}
		s, rs := a.Stats(), ref.Stats()
		if s.Blocks != rs.Blocks || s.Nodes != rs.Nodes || s.Workers != rs.Workers || s.Expired != rs.Expired || s.Pruned != rs.Pruned {
			t.Fatalf("step %d: stats %+v, want %+v", step, s, rs)
		}
		if err := a.Check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	return a.compacted
}

// With now going backwards (the order is then approximate) the structure
// stays consistent, and nothing matches after the latest expiry.
func TestApproxNowBackwards(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	a := NewApprox(ApproxConfig{TTL: 5 * time.Second, MaxBlocks: 30, PruneFraction: 0.5})
	base := time.Unix(1000, 0)
	for step := range 2000 {
		now := base.Add(time.Duration(rng.Int64N(int64(20 * time.Second))))
		p := []uint64{1, uint64(1 + rng.IntN(4)), uint64(1 + rng.IntN(4))}
		a.Insert(kvevents.Worker{ID: uint64(1 + rng.IntN(4))}, p, now)
		if err := a.Check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if got := a.FindMatches(p, base.Add(25*time.Second)); len(got) != 0 {
			t.Fatalf("step %d: %v matched at its expiry", step, got)
		}
	}
}

// TestApproxNotChains replays inserts of arbitrary sequence-hash lists
// (not chains: blocks repeat in other orders and positions) into Approx
// and into refApprox taking them as they are, and requires equal stats
// and block-by-block matches after every operation. Such lists make an
// Insert take pairs from the middle of older generations' lists, whose
// stale items must then be compacted (approxgen.go): that must happen,
// keep the structure's invariants (Check bounds every list but the
// oldest) and change nothing else.
func TestApproxNotChains(t *testing.T) {
	var compacted uint64
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 17))
		cfg := ApproxConfig{TTL: 10 * time.Second, MaxBlocks: 1 << 20, PruneFraction: 0.8}
		if seed%2 == 1 {
			cfg.MaxBlocks, cfg.PruneFraction = 400, 0.5
		}
		a, ref := NewApprox(cfg), newRefApprox(cfg)
		ref.seqs = true
		list := func() []uint64 {
			p := make([]uint64, 1+rng.IntN(4*compactMin))
			for i := range p {
				p[i] = uint64(1 + rng.IntN(3*compactMin))
			}
			return p
		}
		now := time.Unix(1000, 0)
		for step := range 300 {
			switch op := rng.IntN(20); {
			case op < 12:
				if rng.IntN(3) > 0 {
					now = now.Add(time.Duration(rng.Int64N(int64(cfg.TTL) / 4)))
				}
				w := kvevents.Worker{ID: uint64(1 + rng.IntN(3))}
				p := list()
				ref.Insert(w, p, now)
				a.InsertSeq(w, p, now)
			case op < 19:
				p := list()
				at := now.Add(time.Duration(rng.Int64N(int64(cfg.TTL))))
				want := ref.FindMatches(p, at)
				a.mu.RLock()
				got := a.appendMatchesWalk(nil, p, true, at.UnixNano())
				a.mu.RUnlock()
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: match at %v: got %v, want %v", seed, step, at.Sub(time.Unix(1000, 0)), got, want)
				}
			default:
				id := uint64(1 + rng.IntN(3))
				a.RemoveWorker(id)
				ref.RemoveWorker(id)
			}
			s, rs := a.Stats(), ref.Stats()
			if s.Blocks != rs.Blocks || s.Nodes != rs.Nodes || s.Workers != rs.Workers || s.Expired != rs.Expired || s.Pruned != rs.Pruned {
				t.Fatalf("seed %d step %d: stats %+v, want %+v", seed, step, s, rs)
			}
			if err := a.Check(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		}
		compacted += a.compacted
	}
	if compacted == 0 {
		t.Fatal("no list was compacted")
	}
	t.Logf("%d stale items compacted", compacted)
}
