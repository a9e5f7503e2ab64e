package mocker

import (
	"fmt"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// groupMirror is what a router learns from one hybrid engine's events:
// the hashes each group holds (a plain set per group index), and every
// hash's position as the stores announced it.
type groupMirror struct {
	held   [2]map[uint64]bool
	pos    map[uint64]uint32
	nextID uint64
	kind   kvevents.GroupKind
	window uint32
}

func newGroupMirror(h HybridConfig) *groupMirror {
	g := h.withDefaults().Group()
	return &groupMirror{held: [2]map[uint64]bool{{}, {}}, pos: map[uint64]uint32{}, kind: g.Kind, window: g.Window}
}

// step applies one pass's events strictly: consecutive ids, the full
// group's events before the second group's, each store's hashes chained
// from its parent (which the group itself need not hold), no store of a
// held block, no removal of an unheld one, the group's kind and window.
func (m *groupMirror) step(evs []kvevents.Event) error {
	seenGroup := false
	for i := range evs {
		ev := &evs[i]
		if ev.EventID != m.nextID {
			return fmt.Errorf("event id %d, want %d", ev.EventID, m.nextID)
		}
		m.nextID++
		gi := ev.Group.Index
		switch {
		case gi == 0 && !ev.Group.IsZero():
			return fmt.Errorf("group 0 event with group fields: %s", FormatEvent(ev))
		case gi == 0 && seenGroup:
			return fmt.Errorf("full-attention event after a group event: %s", FormatEvent(ev))
		case gi == 1:
			seenGroup = true
			if ev.Group.Kind != m.kind || (ev.Kind == kvevents.KindStored && ev.Group.Window != m.window) {
				return fmt.Errorf("group 1 event with group %s: %s", ev.Group, FormatEvent(ev))
			}
		case gi > 1:
			return fmt.Errorf("unknown group: %s", FormatEvent(ev))
		}
		switch ev.Kind {
		case kvevents.KindStored:
			// A parent the group does not hold is fine: its position is
			// known from any group's store.
			start, err := checkChain(ev, m.pos)
			if err != nil {
				return err
			}
			for k, b := range ev.Blocks {
				if m.held[gi][b.Hash] {
					return fmt.Errorf("block %d already held: %s", k, FormatEvent(ev))
				}
				m.held[gi][b.Hash] = true
				m.pos[b.Hash] = start + uint32(k)
			}
		case kvevents.KindRemoved:
			for _, h := range ev.Hashes {
				if !m.held[gi][h] {
					return fmt.Errorf("remove of unheld %s: %s", ShortHash(h), FormatEvent(ev))
				}
				delete(m.held[gi], h)
			}
		default:
			return fmt.Errorf("unexpected event %s", FormatEvent(ev))
		}
	}
	return nil
}

// naiveJoint recomputes the joint match of the contract from the
// mirror's sets, literally: F leading blocks held by full attention
// (capped at maxHit), then the largest L <= F whose every condition holds.
func (m *groupMirror) naiveJoint(h HybridConfig, hashes []uint64, B, maxHit int) int {
	h = h.withDefaults()
	f := 0
	for f < min(maxHit, len(hashes)) && m.held[0][hashes[f]] {
		f++
	}
	for l := f; l > 0; l-- {
		ok := true
		switch h.Kind {
		case HybridSWA:
			nW := (h.Window - 1 + B - 1) / B
			for j := max(0, l-nW); j < l; j++ {
				ok = ok && m.held[1][hashes[j]]
			}
		case HybridMamba:
			ok = m.held[1][hashes[l-1]]
		}
		if ok {
			return l
		}
	}
	return 0
}

func hybridConfigs() []Config {
	base := DefaultConfig()
	base.NumBlocks, base.BlockSize, base.MaxNumBatchedTokens, base.Watermark = 64, 4, 16, 0
	var out []Config
	for _, h := range []HybridConfig{
		{Kind: HybridSWA, Window: 6, GroupFraction: 0.5},
		{Kind: HybridSWA, Window: 16, GroupFraction: 0.5},
		{Kind: HybridSWA, Window: 5, GroupFraction: 0.25},
		{Kind: HybridMamba, StateInterval: 2, GroupFraction: 0.125},
		{Kind: HybridMamba, StateInterval: 1, GroupFraction: 0.5},
	} {
		c := base
		c.Hybrid = h
		out = append(out, c)
	}
	return out
}

// TestHybridEventsMirrorGroups runs a prefix-sharing workload with
// cancels and preemptions: after every pass the engine's invariants hold,
// its events pass the mirror's strict checks, the mirror holds exactly
// the engine's two pools, and every queued request's joint hit over the
// engine's pools equals the naive recomputation over the mirror.
func TestHybridEventsMirrorGroups(t *testing.T) {
	for ci, cfg := range hybridConfigs() {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/config=%d/seed=%d", cfg.Hybrid.Kind, ci, seed), func(t *testing.T) {
				e := New(cfg)
				m := newGroupMirror(cfg.Hybrid)
				w := newWorkload(seed, cfg.BlockSize, cfg.NumBlocks*cfg.BlockSize/4, 3*cfg.BlockSize)
				var ids []uint64
				preempted, hits := 0, 0
				for step := 0; step < 400 || e.Busy(); step++ {
					if step < 400 {
						for range w.rng.IntN(3) {
							req := w.next()
							if e.Add(req) == nil {
								ids = append(ids, req.ID)
							}
						}
						if w.rng.IntN(12) == 0 && len(ids) > 0 {
							e.Cancel(ids[w.rng.IntN(len(ids))])
						}
					}
					r := e.Step(e.Now())
					preempted += len(r.Preempted)
					for _, f := range r.Finished {
						hits += f.CachedTokens
					}
					if err := m.step(r.Events); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					if err := e.checkInvariants(); err != nil {
						t.Fatalf("step %d: %v\n%s", step, err, e)
					}
					for gi, p := range []*pool{&e.pool, &e.gpool} {
						if len(m.held[gi]) != len(p.byHash) {
							t.Fatalf("step %d: group %d mirror holds %d blocks, engine %d", step, gi, len(m.held[gi]), len(p.byHash))
						}
						for h := range p.byHash {
							if !m.held[gi][h] {
								t.Fatalf("step %d: group %d caches %s, never announced", step, gi, ShortHash(h))
							}
						}
					}
					for i := 0; i < e.waiting.len(); i++ {
						s := e.waiting.at(i)
						maxHit := (s.numTokens - 1) / cfg.BlockSize
						e.ensureHashes(s, maxHit)
						f := 0
						for f < maxHit && isCached(&e.pool, s.hashes[f]) {
							f++
						}
						if got, want := e.jointHit(s, f), m.naiveJoint(cfg.Hybrid, s.hashes, cfg.BlockSize, maxHit); got != want {
							t.Fatalf("step %d: r%d joint hit %d, naive %d (F=%d)", step, s.req.ID, got, want, f)
						}
					}
				}
				t.Logf("preempted=%d cached tokens=%d events=%d", preempted, hits, m.nextID)
			})
		}
	}
}

func isCached(p *pool, h uint64) bool { _, ok := p.byHash[h]; return ok }

// TestHybridCachedIsJointHit runs requests one at a time: each one's
// reported cached tokens (what the HTTP mocker returns as
// usage.prompt_tokens_details.cached_tokens) is the naive joint hit over
// what the events announced before it arrived, which is below the full
// attention overlap a router crediting full attention only would predict,
// for some requests.
func TestHybridCachedIsJointHit(t *testing.T) {
	for ci, cfg := range hybridConfigs() {
		t.Run(fmt.Sprintf("%s/config=%d", cfg.Hybrid.Kind, ci), func(t *testing.T) {
			e := New(cfg)
			m := newGroupMirror(cfg.Hybrid)
			w := newWorkload(7, cfg.BlockSize, cfg.NumBlocks*cfg.BlockSize/4, cfg.BlockSize)
			B := cfg.BlockSize
			below := 0
			for range 300 {
				req := w.next()
				if e.Add(req) != nil {
					continue
				}
				locals := kvhash.SaltLocals(kvhash.LocalHashes(req.Tokens, B, e.seed), "")
				hashes := kvhash.SeqHashes(locals)
				maxHit := (len(req.Tokens) - 1) / B
				want := m.naiveJoint(cfg.Hybrid, hashes, B, maxHit)
				full := 0
				for full < maxHit && m.held[0][hashes[full]] {
					full++
				}
				if want < full {
					below++
				}
				for e.Busy() {
					r := e.Step(e.Now())
					if err := m.step(r.Events); err != nil {
						t.Fatal(err)
					}
					for _, f := range r.Finished {
						if f.CachedTokens != want*B {
							t.Fatalf("r%d cached %d tokens, naive joint hit %d blocks (full attention %d)", f.ID, f.CachedTokens, want, full)
						}
					}
				}
			}
			if below == 0 {
				t.Fatalf("no request's joint hit was below its full-attention overlap: the workload does not exercise the rule")
			}
			t.Logf("%d requests hit less than full attention holds", below)
		})
	}
}

// TestHybridZeroIsFullAttention: the zero HybridConfig emits no group
// fields and the same events as an engine configured without it.
func TestHybridZeroIsFullAttention(t *testing.T) {
	cfg := hybridConfigs()[0]
	cfg.Hybrid = HybridConfig{}
	e := New(cfg)
	w := newWorkload(3, cfg.BlockSize, 64, 8)
	for range 200 {
		_ = e.Add(w.next())
		r := e.Step(e.Now())
		for i := range r.Events {
			if !r.Events[i].Group.IsZero() {
				t.Fatalf("group fields on a full-attention model: %s", FormatEvent(&r.Events[i]))
			}
		}
	}
	if st := e.Stats(); st.Group != (GroupStats{}) {
		t.Fatalf("group stats %+v without a group", st.Group)
	}
}

func TestHybridValidate(t *testing.T) {
	for _, tc := range []struct {
		h   HybridConfig
		bad bool
	}{
		{HybridConfig{}, false},
		{HybridConfig{Kind: HybridSWA}, false},
		{HybridConfig{Kind: HybridMamba}, false},
		{HybridConfig{Window: 128}, true},
		{HybridConfig{Kind: "lstm"}, true},
		{HybridConfig{Kind: HybridSWA, GroupFraction: 1.5}, true},
		{HybridConfig{Kind: HybridSWA, GroupFraction: 0.001}, true},
		{HybridConfig{Kind: HybridMamba, StateInterval: -1}, true},
	} {
		c := DefaultConfig()
		c.Hybrid = tc.h
		if err := c.Validate(); (err != nil) != tc.bad {
			t.Errorf("%+v: Validate() = %v, want error %t", tc.h, err, tc.bad)
		}
	}
	for s, want := range map[string]HybridKind{"full": HybridNone, "": HybridNone, "hybrid-swa": HybridSWA, "hybrid-mamba": HybridMamba} {
		if got, err := ParseHybridKind(s); err != nil || got != want {
			t.Errorf("ParseHybridKind(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParseHybridKind("hybrid-lstm"); err == nil {
		t.Error("ParseHybridKind accepted hybrid-lstm")
	}
}
