package mocker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// refIndex is a reference model of what a router learns from one engine's
// events: the set of engine hashes it holds, with each block's position.
type refIndex struct {
	pos    map[uint64]uint32
	nextID uint64
}

// apply checks an event strictly (what a correct engine must produce) and
// applies it.
func (r *refIndex) apply(ev *kvevents.Event, w kvevents.Worker) error {
	if ev.EventID != r.nextID {
		return fmt.Errorf("event id %d, want %d", ev.EventID, r.nextID)
	}
	r.nextID++
	if ev.Worker() != w {
		return fmt.Errorf("event of %v, engine is %v", ev.Worker(), w)
	}
	switch ev.Kind {
	case kvevents.KindStored:
		start, err := checkChain(ev, r.pos)
		if err != nil {
			return err
		}
		for i, b := range ev.Blocks {
			if _, dup := r.pos[b.Hash]; dup {
				return fmt.Errorf("re-store of held block %s: %s", ShortHash(b.Hash), FormatEvent(ev))
			}
			r.pos[b.Hash] = start + uint32(i)
		}
	case kvevents.KindRemoved:
		for _, h := range ev.Hashes {
			if _, ok := r.pos[h]; !ok {
				return fmt.Errorf("remove of unheld block %s", ShortHash(h))
			}
			delete(r.pos, h)
		}
	default:
		return fmt.Errorf("unexpected event kind %v", ev.Kind)
	}
	return nil
}

// checkChain checks a store's chain: a non-empty run whose parent has a
// known position (pos), whose start is the next one, and whose hashes
// are the sequence hashes from the parent. It returns the start.
func checkChain(ev *kvevents.Event, pos map[uint64]uint32) (uint32, error) {
	if len(ev.Blocks) == 0 {
		return 0, fmt.Errorf("empty store %s", FormatEvent(ev))
	}
	parent, start := uint64(0), uint32(0)
	if ev.HasParent {
		p, ok := pos[ev.Parent]
		if !ok {
			return 0, fmt.Errorf("store with unknown parent: %s", FormatEvent(ev))
		}
		parent, start = ev.Parent, p+1
	}
	if !ev.HasStart || ev.StartPosition != start {
		return 0, fmt.Errorf("store start position %d, want %d: %s", ev.StartPosition, start, FormatEvent(ev))
	}
	for i, b := range ev.Blocks {
		want := b.Local
		if ev.HasParent || i > 0 {
			want = kvhash.SeqNext(parent, b.Local)
		}
		if b.Hash != want {
			return 0, fmt.Errorf("block %d: engine hash is not the sequence hash: %s", i, FormatEvent(ev))
		}
		parent = b.Hash
	}
	return start, nil
}

// workload draws prompts that share prefixes: one of a few "system
// prompts", then one of a few "conversations", then a random tail.
type workload struct {
	rng     *rand.Rand
	prefix  [][]uint32
	nextID  uint64
	maxOut  int
	promptN int
}

func newWorkload(seed uint64, block, maxPrompt, maxOut int) *workload {
	w := &workload{rng: rand.New(rand.NewPCG(seed, 0x5eed)), maxOut: maxOut, promptN: maxPrompt}
	for i := range 6 {
		n := 1 + w.rng.IntN(maxPrompt)
		p := make([]uint32, n)
		for j := range p {
			p[j] = uint32(1000*i + j%(3*block)) // repeated blocks inside a prompt
		}
		w.prefix = append(w.prefix, p)
	}
	return w
}

func (w *workload) next() Request {
	p := w.prefix[w.rng.IntN(len(w.prefix))]
	cut := w.rng.IntN(len(p) + 1)
	toks := slices.Clone(p[:cut])
	for range w.rng.IntN(w.promptN/2 + 1) {
		toks = append(toks, uint32(w.rng.IntN(50)))
	}
	if len(toks) == 0 {
		toks = append(toks, 7)
	}
	w.nextID++
	return Request{ID: w.nextID, Tokens: toks, MaxOutputTokens: 1 + w.rng.IntN(w.maxOut)}
}

func TestEventsMirrorCache(t *testing.T) {
	configs := []func(*Config){
		func(c *Config) {},
		func(c *Config) { c.MaxNumBatchedTokens = 16 },
		func(c *Config) { c.NumBlocks = 24; c.Watermark = 0 },
		func(c *Config) { c.MaxNumSeqs = 3; c.Watermark = 0.2 },
		func(c *Config) { c.BlockSize = 1; c.NumBlocks = 200; c.MaxNumBatchedTokens = 40 },
		func(c *Config) { c.BlockSize = 7; c.NumBlocks = 30 },
	}
	for ci, mod := range configs {
		seeds := uint64(3)
		if testing.Short() {
			seeds = 1
		}
		for seed := uint64(1); seed <= seeds; seed++ {
			t.Run(fmt.Sprintf("config=%d/seed=%d", ci, seed), func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.NumBlocks, cfg.BlockSize, cfg.MaxNumBatchedTokens = 64, 4, 64
				cfg.Worker = kvevents.Worker{ID: 9, Rank: 2}
				mod(&cfg)
				runMirror(t, cfg, seed)
			})
		}
	}
}

func runMirror(t *testing.T, cfg Config, seed uint64) {
	e := New(cfg)
	maxPrompt := max(4, cfg.NumBlocks*cfg.BlockSize/3)
	w := newWorkload(seed, cfg.BlockSize, maxPrompt, 3*cfg.BlockSize)
	ref := &refIndex{pos: map[uint64]uint32{}}
	radix := indexer.NewRadix(indexer.DefaultRadixConfig())
	live := map[uint64]bool{}
	var liveIDs []uint64
	var preempted, finished, cancelled int
	for step := 0; step < 400; step++ {
		for range w.rng.IntN(3) {
			req := w.next()
			if err := e.Add(req); err != nil {
				continue // too long for this pool
			}
			live[req.ID] = true
			liveIDs = append(liveIDs, req.ID)
		}
		if w.rng.IntN(10) == 0 && len(liveIDs) > 0 {
			id := liveIDs[w.rng.IntN(len(liveIDs))]
			if _, ok := e.Cancel(id); ok != live[id] {
				t.Fatalf("cancel r%d: found %t, live %t", id, ok, live[id])
			}
			if live[id] {
				cancelled++
			}
			delete(live, id)
		}
		r := e.Step(e.Now())
		preempted += len(r.Preempted)
		for i := range r.Events {
			if err := ref.apply(&r.Events[i], cfg.Worker); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if err := radix.Apply(&r.Events[i]); err != nil {
				t.Fatalf("step %d: radix rejects %s: %v", step, FormatEvent(&r.Events[i]), err)
			}
		}
		for _, f := range r.Finished {
			if !live[f.ID] {
				t.Fatalf("finished unknown r%d", f.ID)
			}
			delete(live, f.ID)
			finished++
		}
		if err := e.checkInvariants(); err != nil {
			t.Fatalf("step %d: %v\n%s", step, err, e)
		}
		// The reference holds exactly the engine's cached blocks.
		if len(ref.pos) != len(e.pool.byHash) {
			t.Fatalf("step %d: reference holds %d blocks, engine caches %d", step, len(ref.pos), len(e.pool.byHash))
		}
		for h := range e.pool.byHash {
			if _, ok := ref.pos[h]; !ok {
				t.Fatalf("step %d: engine caches %s, never announced", step, ShortHash(h))
			}
		}
		if st := radix.Stats(); st.Blocks != len(e.pool.byHash) {
			t.Fatalf("step %d: radix holds %d blocks, engine caches %d", step, st.Blocks, len(e.pool.byHash))
		}
		// Every waiting/running prompt's cached prefix (by hash) matches
		// the radix index's overlap for this worker, up to the first
		// uncached block.
		if step%25 == 0 {
			checkOverlaps(t, e, radix)
		}
	}
	for e.Busy() {
		r := e.Step(e.Now())
		for i := range r.Events {
			if err := ref.apply(&r.Events[i], cfg.Worker); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range r.Finished {
			delete(live, f.ID)
			finished++
		}
	}
	if len(live) != 0 {
		t.Fatalf("%d requests never finished", len(live))
	}
	if err := e.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	if cfg.EnablePrefixCaching && len(ref.pos) != len(e.pool.byHash) {
		t.Fatalf("after drain: reference %d blocks, engine %d", len(ref.pos), len(e.pool.byHash))
	}
	t.Logf("finished=%d cancelled=%d preempted=%d events=%d", finished, cancelled, preempted, ref.nextID)
}

// checkOverlaps compares, for each request the engine knows, the number of
// leading prompt blocks the engine has cached with the radix overlap.
func checkOverlaps(t *testing.T, e *Engine, radix *indexer.Radix) {
	t.Helper()
	w := e.cfg.Worker
	check := func(s *seq) {
		locals := kvhash.LocalHashes(s.req.Tokens, e.cfg.BlockSize, e.seed)
		hashes := kvhash.SeqHashes(locals)
		want := 0
		for _, h := range hashes {
			if _, ok := e.pool.byHash[h]; !ok {
				break
			}
			want++
		}
		if got := radix.FindMatches(locals).Get(w); got != want {
			t.Fatalf("r%d: radix overlap %d, engine has %d leading blocks cached", s.req.ID, got, want)
		}
	}
	for _, s := range e.running {
		check(s)
	}
	for i := 0; i < e.waiting.len(); i++ {
		check(e.waiting.at(i))
	}
}
