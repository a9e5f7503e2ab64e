package router

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/mocker"
)

// TestTierIndexesMatchEngine drives mocker engines with lower tiers (and
// a shared G4) and checks, after every step, that the router's per-tier
// overlaps equal the engine's truth for every prompt seen: device = the
// leading blocks cached in G1, host_pinned = those held in G1 or G2, disk
// = in G1, G2 or G3 (one chain across tiers), external = the shared
// store's leading blocks. Halfway a second router restored from the
// first's DumpTiers (a replica's snapshot, DESIGN.md §9) joins and takes
// the same events from then on: it must match the engines as well.
func TestTierIndexesMatchEngine(t *testing.T) {
	for _, wt := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			runTierIndexes(t, seed, wt)
		}
	}
}

func runTierIndexes(t *testing.T, seed uint64, writeThrough bool) {
	const B = 4
	cfg := DefaultConfig()
	cfg.BlockSize = B
	cfg.Selector.SharedWeight = 0.5
	cfg.TierChains = true
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	routers := []*Router{r}
	shared := mocker.NewSharedStore(mocker.SharedConfig{Blocks: 30, Worker: kvevents.Worker{ID: 100}})
	var engines []*mocker.Engine
	for i := range 2 {
		ec := mocker.DefaultConfig()
		ec.NumBlocks, ec.BlockSize, ec.MaxNumBatchedTokens, ec.Watermark, ec.SpeedupRatio = 16, B, 32, 0, 0
		ec.Worker = kvevents.Worker{ID: uint64(i + 1)}
		ec.Tiers = mocker.TierConfig{HostBlocks: 20, DiskBlocks: 40, BlockBytes: 1 << 20, Shared: shared, WriteThrough: writeThrough}
		engines = append(engines, mocker.New(ec))
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	prefixes := make([][]uint32, 5)
	for i := range prefixes {
		for j := range 8 + rng.IntN(30) {
			prefixes[i] = append(prefixes[i], uint32(100*i+j))
		}
	}
	var prompts [][]uint32
	// The router's view of a worker starts at its first lower-tier event;
	// before it, host and disk hold nothing of the worker.
	sawLower := map[kvevents.Worker]bool{}
	apply := func(evs []kvevents.Event) {
		for i := range evs {
			if evs[i].Tier != kvevents.TierDevice {
				sawLower[evs[i].Worker()] = true
			}
			for j, r := range routers {
				if err := r.ApplyEvent(&evs[i]); err != nil {
					t.Fatalf("router %d rejects %s: %v", j, mocker.FormatEvent(&evs[i]), err)
				}
			}
		}
	}
	held := func(e *mocker.Engine, tiers ...kvevents.Tier) map[uint64]bool {
		m := map[uint64]bool{}
		for _, tr := range tiers {
			for _, h := range e.TierBlocks(tr) {
				m[h] = true
			}
		}
		return m
	}
	lead := func(seq []uint64, m map[uint64]bool) int {
		n := 0
		for n < len(seq) && m[seq[n]] {
			n++
		}
		return n
	}
	id := uint64(0)
	for step := range 250 {
		if step == 125 {
			r2, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))})
			if err != nil {
				t.Fatal(err)
			}
			dump := r.DumpTiers()
			for i := range dump {
				if err := r2.ApplyEvent(&dump[i]); err != nil {
					t.Fatalf("seed %d: restore rejects %s: %v", seed, mocker.FormatEvent(&dump[i]), err)
				}
			}
			routers = append(routers, r2)
		}
		e := engines[0]
		if engines[1].Now() < e.Now() {
			e = engines[1]
		}
		if rng.IntN(2) == 0 {
			p := prefixes[rng.IntN(len(prefixes))]
			toks := append([]uint32(nil), p[:1+rng.IntN(len(p))]...)
			for range rng.IntN(6) {
				toks = append(toks, uint32(rng.IntN(40)))
			}
			id++
			if e.Add(mocker.Request{ID: id, Tokens: toks, MaxOutputTokens: 1 + rng.IntN(4), Arrival: e.Now()}) == nil {
				prompts = append(prompts, toks)
			}
		}
		if e.Busy() {
			res := e.Step(e.Now())
			apply(res.Events)
		} else {
			apply(e.Advance(e.Now() + time.Duration(rng.IntN(30))*time.Millisecond))
		}
		for _, toks := range prompts[max(0, len(prompts)-12):] {
			locals := kvhash.LocalHashes(toks, B, kvhash.DefaultSeed)
			seq := kvhash.SeqHashes(locals)
			for _, eng := range engines {
				w := eng.Config().Worker
				want := [kvevents.NumTiers]int{
					lead(seq, held(eng, kvevents.TierDevice)),
					lead(seq, held(eng, kvevents.TierDevice, kvevents.TierHostPinned)),
					lead(seq, held(eng, kvevents.TierDevice, kvevents.TierHostPinned, kvevents.TierDisk)),
				}
				if !sawLower[w] {
					want[kvevents.TierHostPinned], want[kvevents.TierDisk] = 0, 0
				}
				for j, r := range routers {
					for tr := range kvevents.TierExternal {
						if got := r.Index(tr).FindMatches(locals).Get(w); got != want[tr] {
							t.Fatalf("seed %d step %d: router %d: w%v %s overlap %d, engine holds %d leading blocks", seed, step, j, w, tr, got, want[tr])
						}
					}
				}
			}
			wantG4 := lead(seq, held(engines[0], kvevents.TierExternal))
			for j, r := range routers {
				if got := r.Index(kvevents.TierExternal).FindMatches(locals).Get(shared.Worker()); got != wantG4 {
					t.Fatalf("seed %d step %d: router %d: G4 overlap %d, store holds %d leading blocks", seed, step, j, got, wantG4)
				}
			}
		}
	}
	var lower uint64
	for _, e := range engines {
		st := e.Stats()
		lower += st.OnboardedBlocks
	}
	if lower == 0 || shared.Len() == 0 {
		t.Fatalf("seed %d: nothing onboarded (%d) or offloaded to G4 (%d)", seed, lower, shared.Len())
	}
}
