package mocker

import (
	"errors"
	"fmt"
	"math"

	"github.com/kvrouter/kvrouter/kvevents"
)

// HybridKind names the model's second KV cache group (DESIGN.md §13).
type HybridKind string

// The hybrid models the engine simulates.
const (
	// HybridNone is a model of full-attention layers only: one block pool,
	// events without group fields (the zero value).
	HybridNone HybridKind = ""
	// HybridSWA adds a sliding-window attention group (gpt-oss-like:
	// full and sliding layers alternate).
	HybridSWA HybridKind = "swa"
	// HybridMamba adds a recurrent-state group (Nemotron-H- or
	// Jamba-like: Mamba layers beside a few attention layers).
	HybridMamba HybridKind = "mamba"
)

// Defaults of the hybrid model (see HybridConfig).
const (
	// DefaultHybridWindow is gpt-oss's sliding window, in tokens.
	DefaultHybridWindow = 128
	// DefaultStateInterval is the state checkpoint spacing in blocks: 512
	// tokens at the default block size, the order of the attention block
	// sizes vLLM pads to a Mamba state's page size.
	DefaultStateInterval = 8
	// DefaultSWAFraction and DefaultMambaFraction size the second group's
	// pool as a fraction of NumBlocks.
	DefaultSWAFraction   = 0.5
	DefaultMambaFraction = 0.25
)

// HybridConfig makes the engine a hybrid model: beside the full-attention
// pool (group 0) it keeps a second group (index 1) with a pool of its own.
// The zero value is a full-attention model, exactly as without it.
type HybridConfig struct {
	// Kind is the second group's kind; "" = none.
	Kind HybridKind `yaml:"kind"`
	// Window is the sliding window in tokens (swa). Default 128.
	Window int `yaml:"window"`
	// StateInterval is the spacing of state checkpoints in blocks
	// (mamba). Default 8.
	StateInterval int `yaml:"state_interval"`
	// GroupFraction is the second group's pool size as a fraction of
	// NumBlocks, in (0, 1]. Default 0.5 (swa) or 0.25 (mamba).
	GroupFraction float64 `yaml:"group_fraction"`
}

// ParseHybridKind parses a model kind as the command lines name it:
// "full" (or ""), "hybrid-swa", "hybrid-mamba".
func ParseHybridKind(s string) (HybridKind, error) {
	switch s {
	case "", "full":
		return HybridNone, nil
	case "hybrid-swa", "swa":
		return HybridSWA, nil
	case "hybrid-mamba", "mamba":
		return HybridMamba, nil
	}
	return "", fmt.Errorf("mocker: unknown model kind %q (want full, hybrid-swa or hybrid-mamba)", s)
}

// Enabled reports whether the model has a second group.
func (h HybridConfig) Enabled() bool { return h.Kind != HybridNone }

// withDefaults fills the zero knobs of an enabled config.
func (h HybridConfig) withDefaults() HybridConfig {
	if !h.Enabled() {
		return h
	}
	if h.Window == 0 {
		h.Window = DefaultHybridWindow
	}
	if h.StateInterval == 0 {
		h.StateInterval = DefaultStateInterval
	}
	if h.GroupFraction == 0 {
		h.GroupFraction = DefaultSWAFraction
		if h.Kind == HybridMamba {
			h.GroupFraction = DefaultMambaFraction
		}
	}
	return h
}

// groupBlocks is the second group's pool size.
func (h HybridConfig) groupBlocks(numBlocks int) int {
	return int(h.GroupFraction * float64(numBlocks))
}

// windowBlocks is nW = ceil((W-1)/B): the blocks before a prefix end the
// window needs (vLLM's SlidingWindowManager).
func (h HybridConfig) windowBlocks(B int) int { return (h.Window - 1 + B - 1) / B }

// Group is the second group's kvevents identity.
func (h HybridConfig) Group() kvevents.Group {
	switch h.Kind {
	case HybridSWA:
		return kvevents.Group{Index: 1, Kind: kvevents.GroupSliding, Window: uint32(h.Window)}
	case HybridMamba:
		return kvevents.Group{Index: 1, Kind: kvevents.GroupState}
	}
	return kvevents.Group{}
}

func (c Config) validateHybrid() error {
	h := c.Hybrid
	if !h.Enabled() {
		if h != (HybridConfig{}) {
			return errors.New("mocker: hybrid knobs set without a hybrid kind")
		}
		return nil
	}
	if h.Kind != HybridSWA && h.Kind != HybridMamba {
		return fmt.Errorf("mocker: unknown hybrid kind %q (want swa or mamba)", h.Kind)
	}
	if h.Window < 0 || h.StateInterval < 0 || !(h.GroupFraction >= 0 && h.GroupFraction <= 1) || math.IsNaN(h.GroupFraction) {
		return fmt.Errorf("mocker: hybrid window %d and state interval %d must be >= 0, group fraction %v in [0, 1]",
			h.Window, h.StateInterval, h.GroupFraction)
	}
	if c.Tiers.enabled() {
		return errors.New("mocker: a hybrid model with lower tiers is not modelled")
	}
	if c.BlockSize <= 0 || c.NumBlocks <= 0 || c.MaxNumBatchedTokens <= 0 {
		return nil // reported by Validate
	}
	h = h.withDefaults()
	// One request must always fit the group alone (New's promise that an
	// empty engine admits any request Add accepted): its window plus one
	// pass's chunk (swa), its running state plus a checkpoint (mamba).
	need := 2
	if h.Kind == HybridSWA {
		need = h.windowBlocks(c.BlockSize) + (c.MaxNumBatchedTokens+c.BlockSize-1)/c.BlockSize + 1
	}
	if n := h.groupBlocks(c.NumBlocks); n < need {
		return fmt.Errorf("mocker: hybrid group of %d blocks (group_fraction %v of %d) is below the %d one request needs",
			n, h.GroupFraction, c.NumBlocks, need)
	}
	return nil
}

// jointHit is the prefix hit of the hybrid rule (DESIGN.md §13, the
// contract of the router's joint match): the largest L <= f such that the
// sliding group holds the blocks [max(0, L-nW), L), or the state group
// holds the checkpoint at L (block L-1). L = 0 always qualifies.
func (e *Engine) jointHit(s *seq, f int) int {
	g := &e.gpool
	switch e.hybrid.Kind {
	case HybridSWA:
		nW := e.hybrid.windowBlocks(e.cfg.BlockSize)
		best, run := 0, 0
		for l := 1; l <= f; l++ {
			if _, ok := g.byHash[s.hashes[l-1]]; ok {
				run++
			} else {
				run = 0
			}
			if run >= min(l, nW) {
				best = l
			}
		}
		return best
	case HybridMamba:
		for l := f; l > 0; l-- {
			if _, ok := g.byHash[s.hashes[l-1]]; ok {
				return l
			}
		}
		return 0
	}
	return f
}

// groupNeed is how many blocks the second group must supply for s to hold
// upto tokens (its hits at admission not counted).
func (e *Engine) groupNeed(s *seq, upto int) int {
	if e.hybrid.Kind == HybridMamba {
		if s.state == none {
			return 1
		}
		return 0
	}
	B := e.cfg.BlockSize
	return max(0, (upto+B-1)/B-len(s.gblocks))
}

// groupAdmit makes s hold the second group's part of its hit of l blocks:
// the window's blocks (swa) or a running state copied from the checkpoint
// at l (mamba). The caller checked the group's capacity.
func (e *Engine) groupAdmit(s *seq, l int) {
	g := &e.gpool
	switch e.hybrid.Kind {
	case HybridSWA:
		s.gblocks = s.gblocks[:0]
		from := max(0, l-e.hybrid.windowBlocks(e.cfg.BlockSize))
		for j := range l {
			b := int32(none)
			if j >= from {
				b = g.byHash[s.hashes[j]]
				g.acquire(b)
				g.blocks[b].uses++
			}
			s.gblocks = append(s.gblocks, b)
		}
		s.gfirst = from
	case HybridMamba:
		var cp int32 = none
		if l > 0 {
			// Pin the checkpoint while the running state is taken, so
			// that take cannot evict it.
			cp = g.byHash[s.hashes[l-1]]
			g.acquire(cp)
			g.blocks[cp].uses++
		}
		s.state = e.groupTake()
		if cp != none {
			g.release(cp)
		}
	}
}

// groupAllocate extends s's sliding group to upto tokens after releasing
// the blocks that left the window at numComputed: to the group's LRU at
// once (so they are evicted before the blocks still in a window), lowest
// position first. False, with nothing allocated, when the group cannot.
func (e *Engine) groupAllocate(s *seq, upto int) bool {
	if e.hybrid.Kind != HybridSWA {
		return true
	}
	B := e.cfg.BlockSize
	skip := max(0, (s.numComputed-e.hybrid.Window+1)/B)
	for ; s.gfirst < min(skip, len(s.gblocks)); s.gfirst++ {
		if b := s.gblocks[s.gfirst]; b != none {
			e.gpool.release(b)
			s.gblocks[s.gfirst] = none
		}
	}
	need := e.groupNeed(s, upto)
	if need > e.gpool.capacity() {
		return false
	}
	for range need {
		s.gblocks = append(s.gblocks, e.groupTake())
	}
	return true
}

// groupTake takes a second-group block, announcing an eviction.
func (e *Engine) groupTake() int32 {
	b, ev, evicted := e.gpool.take()
	if evicted {
		e.emitGroupRemoved(ev.hash)
	}
	return b
}

// groupRegister caches the second group's blocks of s's newly full blocks
// [from, to): every sliding block (shared when the group has it already),
// or a state checkpoint at every StateInterval-th block and at the
// prompt's last full block (a later turn that extends the prompt resumes
// there). A checkpoint is a copy of the running state, released to the
// group's LRU at once: the request runs on.
func (e *Engine) groupRegister(s *seq, from, to int) {
	g := &e.gpool
	run := -1
	flush := func(j int) {
		if run >= 0 {
			e.emitGroupStored(s, run, j)
			run = -1
		}
	}
	promptEnd := len(s.req.Tokens) / e.cfg.BlockSize
	for j := from; j < to; j++ {
		h := s.hashes[j]
		var parent uint64
		if j > 0 {
			parent = s.hashes[j-1]
		}
		switch e.hybrid.Kind {
		case HybridSWA:
			if b, ok := g.byHash[h]; ok {
				flush(j)
				g.acquire(b)
				g.blocks[b].uses++
				g.release(s.gblocks[j])
				s.gblocks[j] = b
				continue
			}
			g.cache(s.gblocks[j], h, s.locals[j], parent, uint32(j))
		case HybridMamba:
			if (j+1)%e.hybrid.StateInterval != 0 && j+1 != promptEnd {
				flush(j)
				continue
			}
			if b, ok := g.byHash[h]; ok {
				flush(j)
				g.acquire(b)
				g.blocks[b].uses++
				g.release(b)
				continue
			}
			if g.capacity() == 0 {
				flush(j) // every block runs a request: no checkpoint
				continue
			}
			b := e.groupTake()
			g.cache(b, h, s.locals[j], parent, uint32(j))
			g.release(b)
			// Announce it now: the next checkpoint's take may evict it.
			e.emitGroupStored(s, j, j+1)
			continue
		}
		if run < 0 {
			run = j
		}
	}
	flush(to)
}

// groupFree releases s's second-group blocks (the window's in reverse
// order, as the full pool's; the running state, uncached, to the free
// stack).
func (e *Engine) groupFree(s *seq) {
	for j := len(s.gblocks) - 1; j >= s.gfirst; j-- {
		if b := s.gblocks[j]; b != none {
			e.gpool.release(b)
		}
	}
	s.gblocks, s.gfirst = s.gblocks[:0], 0
	if s.state != none {
		e.gpool.release(s.state)
		s.state = none
	}
}

// emitGroupRemoved and emitGroupStored queue the second group's events;
// flushGroupEvents appends them after the pass's full-attention events
// (numbering them then), so a consumer applies a pass's full-attention
// stores before the other group's.
func (e *Engine) emitGroupRemoved(h uint64) {
	if n := len(e.gevents); n > 0 && e.gevents[n-1].Kind == kvevents.KindRemoved {
		e.gevents[n-1].Hashes = append(e.gevents[n-1].Hashes, h)
		return
	}
	e.gevents = append(e.gevents, kvevents.Event{Kind: kvevents.KindRemoved, Hashes: []uint64{h},
		Group: kvevents.Group{Index: 1, Kind: e.hybrid.Group().Kind}})
}

func (e *Engine) emitGroupStored(s *seq, from, to int) {
	if n := len(e.gevents); n > 0 && from > 0 {
		if last := &e.gevents[n-1]; last.Kind == kvevents.KindStored && last.Blocks[len(last.Blocks)-1].Hash == s.hashes[from-1] {
			for j := from; j < to; j++ {
				last.Blocks = append(last.Blocks, kvevents.Block{Hash: s.hashes[j], Local: s.locals[j]})
			}
			return
		}
	}
	ev := kvevents.Event{Kind: kvevents.KindStored, Group: e.hybrid.Group(), HasStart: true, StartPosition: uint32(from)}
	if from > 0 {
		ev.HasParent, ev.Parent = true, s.hashes[from-1]
	}
	ev.Blocks = make([]kvevents.Block, to-from)
	for j := from; j < to; j++ {
		ev.Blocks[j-from] = kvevents.Block{Hash: s.hashes[j], Local: s.locals[j]}
	}
	e.gevents = append(e.gevents, ev)
}

func (e *Engine) flushGroupEvents() {
	for _, g := range e.gevents {
		ev := e.nextEvent(g.Kind)
		ev.Hashes, ev.Blocks, ev.Group = g.Hashes, g.Blocks, g.Group
		ev.HasParent, ev.Parent, ev.HasStart, ev.StartPosition = g.HasParent, g.Parent, g.HasStart, g.StartPosition
		e.events = append(e.events, ev)
	}
	clear(e.gevents)
	e.gevents = e.gevents[:0]
}

// GroupStats is a snapshot of the second group's pool (zero without one).
type GroupStats struct {
	Group                         kvevents.Group
	Total, Active, Inactive, Free int
}

func (e *Engine) groupStats() GroupStats {
	if !e.hybrid.Enabled() {
		return GroupStats{}
	}
	g := &e.gpool
	return GroupStats{Group: e.hybrid.Group(), Total: len(g.blocks), Active: g.active, Inactive: g.lruLen, Free: len(g.free)}
}

// groupFits reports whether the second group can admit s with a hit of l
// blocks and upto tokens to hold (always, without a second group).
func (e *Engine) groupFits(s *seq, l, upto int) bool {
	if !e.hybrid.Enabled() {
		return true
	}
	g := &e.gpool
	revived := 0 // cached hit blocks the admission takes out of the LRU
	need := 1
	switch e.hybrid.Kind {
	case HybridSWA:
		for j := max(0, l-e.hybrid.windowBlocks(e.cfg.BlockSize)); j < l; j++ {
			if g.blocks[g.byHash[s.hashes[j]]].ref == 0 {
				revived++
			}
		}
		B := e.cfg.BlockSize
		need = (upto+B-1)/B - l
	case HybridMamba:
		if l > 0 && g.blocks[g.byHash[s.hashes[l-1]]].ref == 0 {
			revived = 1
		}
	}
	return g.capacity()-revived >= need
}

// checkGroup verifies the second group: its pool against its holders'
// references, a sliding request holding exactly the positions from gfirst
// on (cached once registered) and nothing below gfirst or its window, a
// recurrent one exactly one uncached running state.
func (e *Engine) checkGroup() []error {
	g := &e.gpool
	var errs []error
	refs := make([]int32, len(g.blocks))
	B := e.cfg.BlockSize
	for _, s := range e.running {
		if s.state != none {
			refs[s.state]++
			if g.blocks[s.state].cached {
				errs = append(errs, fmt.Errorf("r%d runs on cached state block g1:b%d", s.req.ID, s.state))
			}
		} else if e.hybrid.Kind == HybridMamba {
			errs = append(errs, fmt.Errorf("running r%d has no state block", s.req.ID))
		}
		if e.hybrid.Kind != HybridSWA {
			continue
		}
		if len(s.gblocks) != len(s.blocks) || s.gfirst > max(0, (s.numComputed-e.hybrid.Window+1)/B) {
			errs = append(errs, fmt.Errorf("r%d holds %d sliding blocks from %d for %d blocks, %d computed tokens",
				s.req.ID, len(s.gblocks), s.gfirst, len(s.blocks), s.numComputed))
		}
		for j, b := range s.gblocks {
			switch {
			case (b == none) != (j < s.gfirst):
				errs = append(errs, fmt.Errorf("r%d sliding position %d holds g1:b%d, window from %d", s.req.ID, j, b, s.gfirst))
			case b == none:
			case j < s.registered && e.cfg.EnablePrefixCaching && (!g.blocks[b].cached || g.blocks[b].hash != s.hashes[j]):
				errs = append(errs, fmt.Errorf("r%d registered sliding position %d: g1:b%d not cached under its hash", s.req.ID, j, b))
			default:
				refs[b]++
			}
		}
	}
	for i := 0; i < e.waiting.len(); i++ {
		if s := e.waiting.at(i); len(s.gblocks) != 0 || s.state != none {
			errs = append(errs, fmt.Errorf("waiting r%d holds group blocks", s.req.ID))
		}
	}
	return append(errs, checkPool(g, refs, "g1 ")...)
}
