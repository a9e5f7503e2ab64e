package mocker

import (
	"fmt"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// tierRef is what a router learns of one tier from the events: the set of
// engine hashes held. Unlike refIndex, a store may name a parent the tier
// does not hold (the prefix chain runs across tiers); the hash chain must
// still be the sequence hash of the parent.
type tierRef struct{ held map[uint64]bool }

func (r *tierRef) apply(ev *kvevents.Event) error {
	switch ev.Kind {
	case kvevents.KindStored:
		parent := ev.Parent
		for i, b := range ev.Blocks {
			want := b.Local
			if ev.HasParent || i > 0 {
				want = kvhash.SeqNext(parent, b.Local)
			}
			if b.Hash != want {
				return fmt.Errorf("block %d not chained: %s", i, FormatEvent(ev))
			}
			if r.held[b.Hash] {
				return fmt.Errorf("re-store of held %s: %s", ShortHash(b.Hash), FormatEvent(ev))
			}
			r.held[b.Hash] = true
			parent = b.Hash
		}
	case kvevents.KindRemoved:
		for _, h := range ev.Hashes {
			if !r.held[h] {
				return fmt.Errorf("remove of unheld %s: %s", ShortHash(h), FormatEvent(ev))
			}
			delete(r.held, h)
		}
	default:
		return fmt.Errorf("unexpected %s", FormatEvent(ev))
	}
	return nil
}

// tierMirror checks that, after every step, the events each tier received
// rebuild exactly that tier's content, for several engines sharing one G4.
type tierMirror struct {
	refs   map[kvevents.Worker]*[kvevents.NumTiers]tierRef
	nextID map[kvevents.Worker]uint64
}

func (m *tierMirror) apply(evs []kvevents.Event) error {
	for i := range evs {
		ev := &evs[i]
		w := ev.Worker()
		if ev.EventID != m.nextID[w] {
			return fmt.Errorf("%v: event id %d, want %d", w, ev.EventID, m.nextID[w])
		}
		m.nextID[w]++
		refs := m.refs[w]
		if refs == nil {
			refs = new([kvevents.NumTiers]tierRef)
			for t := range refs {
				refs[t].held = map[uint64]bool{}
			}
			m.refs[w] = refs
		}
		if err := refs[ev.Tier].apply(ev); err != nil {
			return fmt.Errorf("%v %s: %w", w, ev.Tier, err)
		}
	}
	return nil
}

func (m *tierMirror) check(e *Engine, w kvevents.Worker, t kvevents.Tier) error {
	got := e.TierBlocks(t)
	var ref map[uint64]bool
	if r := m.refs[w]; r != nil {
		ref = r[t].held
	}
	if len(got) != len(ref) {
		return fmt.Errorf("%s of %v: engine holds %d blocks, events say %d", t, w, len(got), len(ref))
	}
	for _, h := range got {
		if !ref[h] {
			return fmt.Errorf("%s of %v: engine holds %s, never announced", t, w, ShortHash(h))
		}
	}
	return nil
}

func TestTierEventsMirrorContent(t *testing.T) {
	type variant struct {
		name string
		mod  func(*TierConfig)
	}
	variants := []variant{
		{"write-back", func(c *TierConfig) {}},
		{"write-through", func(c *TierConfig) { c.WriteThrough = true }},
		{"reuse-screen", func(c *TierConfig) { c.MinReuse = 1 }},
		{"host-only", func(c *TierConfig) { c.DiskBlocks = 0 }},
		{"disk-only", func(c *TierConfig) { c.HostBlocks = 0 }},
		{"shared", func(c *TierConfig) {
			c.Shared = NewSharedStore(SharedConfig{Blocks: 40, Worker: kvevents.Worker{ID: 1000}})
		}},
		{"slow-links", func(c *TierConfig) {
			c.HostLink = Link{Bandwidth: 1e6, Latency: time.Millisecond}
			c.DiskLink = Link{Bandwidth: 1e5, Latency: 5 * time.Millisecond}
		}},
	}
	for _, v := range variants {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", v.name, seed), func(t *testing.T) {
				tc := TierConfig{HostBlocks: 24, DiskBlocks: 48, BlockBytes: 4096}
				v.mod(&tc)
				runTierMirror(t, tc, seed)
			})
		}
	}
}

// runTierMirror drives two engines (sharing tc.Shared, when set) with a
// random workload of shared prefixes and checks every tier against its
// events after every step and at the end.
func runTierMirror(t *testing.T, tc TierConfig, seed uint64) {
	var engines []*Engine
	for i := range 2 {
		cfg := DefaultConfig()
		cfg.NumBlocks, cfg.BlockSize, cfg.MaxNumBatchedTokens, cfg.Watermark = 16, 4, 32, 0
		cfg.SpeedupRatio = 0
		cfg.Worker = kvevents.Worker{ID: uint64(i + 1)}
		cfg.Tiers = tc
		engines = append(engines, New(cfg))
	}
	w := newWorkload(seed, 4, 40, 6)
	m := &tierMirror{refs: map[kvevents.Worker]*[kvevents.NumTiers]tierRef{}, nextID: map[kvevents.Worker]uint64{}}
	tiers := []kvevents.Tier{kvevents.TierDevice, kvevents.TierHostPinned, kvevents.TierDisk, kvevents.TierExternal}
	checkAll := func(step int) {
		t.Helper()
		for _, e := range engines {
			if err := e.checkInvariants(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			for _, tier := range tiers {
				if tier == kvevents.TierExternal {
					continue
				}
				if err := m.check(e, e.cfg.Worker, tier); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
		}
		if sh := tc.Shared; sh != nil {
			if err := m.check(engines[0], sh.Worker(), kvevents.TierExternal); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	var live []uint64
	onboarded := uint64(0)
	for step := 0; step < 300; step++ {
		// Engines step in simulated-time order (they share G4).
		e := engines[0]
		if engines[1].Now() < e.Now() {
			e = engines[1]
		}
		for range w.rng.IntN(3) {
			req := w.next()
			req.Arrival = e.Now()
			if e.Add(req) == nil {
				live = append(live, req.ID)
			}
		}
		if w.rng.IntN(8) == 0 && len(live) > 0 {
			id := live[w.rng.IntN(len(live))]
			for _, x := range engines {
				x.Cancel(id)
			}
		}
		var evs []kvevents.Event
		if e.Busy() {
			r := e.Step(e.Now())
			evs = r.Events
		} else {
			evs = e.Advance(e.Now() + time.Duration(w.rng.IntN(20))*time.Millisecond)
		}
		if err := m.apply(evs); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		checkAll(step)
	}
	// Drain requests, then the pipeline.
	for _, e := range engines {
		for i := 0; e.Busy(); i++ {
			if i > 10000 {
				t.Fatal("engine does not drain")
			}
			r := e.Step(e.Now())
			if err := m.apply(r.Events); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.apply(e.Advance(e.Now() + time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, ok := e.NextOffload(); ok {
			t.Fatal("pipeline not empty an hour later")
		}
		onboarded += e.Stats().OnboardedBlocks
	}
	checkAll(-1)
	ps := engines[0].PipelineStats()
	t.Logf("onboarded=%d pipeline=%+v", onboarded, ps)
	if ps.Committed == 0 || onboarded == 0 {
		t.Fatalf("workload exercised nothing: committed %d, onboarded %d", ps.Committed, onboarded)
	}
}
