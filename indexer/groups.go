package indexer

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// Groups is the KV cache group overlay of DESIGN.md §13: it wraps an
// event-fed Index (Flash, Radix, Sharded), which keeps the full-attention
// group, and keeps each hybrid worker's sliding-window and recurrent-state
// groups itself; lookups credit the joint match.
//
// Events. A Stored or Removed event of a full-attention group
// (kvevents.GroupFull, any group index) goes to the inner index
// unchanged. One of a sliding or state group goes to that group of its
// worker+rank: the group holds blocks by engine hash, each naming its
// prefix id (kvhash.PrefixNext chain of local hashes from the root, the
// ids a prompt's blocks have). A store's parent is resolved to a prefix
// id through the worker's own group blocks, else the inner index
// (PrefixResolver); no parent, or parent 0, is the root. A store whose
// parent is neither is held (GroupsConfig.MaxPending per worker+rank,
// oldest dropped and counted) until a later store of the worker names
// it: crediting nothing meanwhile only under-credits. A Removed event
// drops the named blocks from its group only, not their descendants:
// sliding and state groups are not prefix-closed (a window drops old
// blocks, state checkpoints are sparse). Cleared drops every group's
// blocks (the worker stays hybrid: its groups still limit its match);
// RemoveWorker forgets the worker.
//
// Matching. F is the inner index's overlap. The joint match is the
// largest L <= F such that every sliding group (window W tokens, block
// size B) holds the blocks at positions [max(0, L-nW), L), nW =
// ceil((W-1)/B), and every state group holds the block at L-1; L = 0
// always qualifies. A sliding group whose stores never gave a window needs
// every block below L. A worker that never sent a non-full group's event
// is untouched: its overlap is the inner index's, byte for byte, and
// when no worker is hybrid a lookup costs one atomic load more than the
// inner index's (GroupsConfig.FullOnly credits F for every worker).
// Explain gives each group's own figure and the group that limited L.
//
// Dump returns the inner index's dump, then each hybrid worker's group
// blocks as Stored events carrying their Group, one per chain a group
// holds, parents first; replaying it rebuilds the groups whose blocks'
// parents are still held somewhere.
//
// Groups is safe for concurrent use under the Index contract (one
// goroutine at a time per worker+rank, in order): group state is under
// one RWMutex, lookups of hybrid workers read it under the read lock.
type Groups struct {
	inner  Index
	res    PrefixResolver // inner's; nil when it resolves nothing
	cfg    GroupsConfig
	hybrid atomic.Int32 // hybrid worker+ranks (len(workers))

	mu      sync.RWMutex // guards the fields below
	workers map[kvevents.Worker]*hybridWorker

	// Group events' counters (Stats).
	applied, rejected, unknown, dropped, parked uint64
}

// hybridWorker is one worker+rank's non-full groups, sorted by index.
type hybridWorker struct {
	groups  []*groupState
	pending []kvevents.Event // stores waiting for their parent, oldest first
}

// groupState is one sliding or state group of one worker+rank.
type groupState struct {
	g      kvevents.Group
	blocks map[uint64]groupBlock // engine hash -> block
	// held is prefix id -> blocks naming it (an htable: lookups probe
	// it per window block, where a Go map cost about twice as much).
	held *htable
}

// groupBlock is one block a group holds: its prefix id, and for Dump its
// local hash and the parent its store named.
type groupBlock struct {
	id, local, parent uint64
	hasParent         bool
}

var (
	_ Index           = (*Groups)(nil)
	_ MatchAppender   = (*Groups)(nil)
	_ IDMatchAppender = (*Groups)(nil)
	_ PrefixResolver  = (*Groups)(nil)
)

// NewGroups wraps inner (cfg's zero fields mean DefaultGroupsConfig's).
func NewGroups(inner Index, cfg GroupsConfig) *Groups {
	g := &Groups{inner: inner, cfg: cfg.withDefaults(), workers: map[kvevents.Worker]*hybridWorker{}}
	g.res, _ = inner.(PrefixResolver)
	return g
}

// Inner returns the wrapped index.
func (g *Groups) Inner() Index { return g.inner }

// Apply implements Index.
func (g *Groups) Apply(ev *kvevents.Event) error {
	if ev.Kind == kvevents.KindCleared {
		err := g.inner.Apply(ev)
		if g.hybrid.Load() != 0 {
			g.mu.Lock()
			if hw := g.workers[ev.Worker()]; hw != nil {
				for _, s := range hw.groups {
					clear(s.blocks)
					s.held = newHtable(0)
				}
				hw.pending = nil
			}
			g.mu.Unlock()
		}
		return err
	}
	if ev.Group.Kind == kvevents.GroupFull || (ev.Kind != kvevents.KindStored && ev.Kind != kvevents.KindRemoved) {
		err := g.inner.Apply(ev)
		if err == nil && ev.Kind == kvevents.KindStored && g.hybrid.Load() != 0 {
			// Only this worker's writer changes its pending list, so a
			// read-locked look decides whether to take the write lock.
			g.mu.RLock()
			hw := g.workers[ev.Worker()]
			waiting := hw != nil && len(hw.pending) > 0
			g.mu.RUnlock()
			if waiting {
				g.mu.Lock()
				g.retryPending(ev.Worker(), hw)
				g.mu.Unlock()
			}
		}
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	err := g.applyGroup(ev)
	if err != nil {
		g.rejected++
		return wrapApply(ev, err)
	}
	g.applied++
	return nil
}

// applyBatch applies evs (Concurrent's writers): through the inner
// index's batch while no worker is hybrid and evs hold no group event,
// else one by one. A worker turns hybrid only by an event of its own, and
// its events come through this writer, so the check cannot race.
func (g *Groups) applyBatch(evs []kvevents.Event, errs []error) {
	ba, ok := g.inner.(batchApplier)
	if ok && g.hybrid.Load() == 0 && !slices.ContainsFunc(evs, func(ev kvevents.Event) bool {
		return ev.Group.Kind != kvevents.GroupFull
	}) {
		ba.applyBatch(evs, errs)
		return
	}
	for i := range evs {
		errs[i] = g.Apply(&evs[i])
	}
}

// shardQueues forwards a Sharded inner index's writer pinning.
func (g *Groups) shardQueues() (int, func(kvevents.Worker) int) {
	if sq, ok := g.inner.(interface {
		shardQueues() (int, func(kvevents.Worker) int)
	}); ok {
		return sq.shardQueues()
	}
	return 0, nil
}

// applyGroup applies a sliding or state group's Stored or Removed event
// (g.mu held).
func (g *Groups) applyGroup(ev *kvevents.Event) error {
	if err := ev.Group.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	w := ev.Worker()
	hw := g.workers[w]
	if ev.Kind == kvevents.KindRemoved {
		s := hw.group(ev.Group.Index)
		for _, h := range ev.Hashes {
			if s == nil || !s.drop(h) {
				g.unknown++
			}
		}
		return nil
	}
	if err := checkSelfParent(ev); err != nil {
		return err
	}
	if hw == nil {
		hw = &hybridWorker{}
		g.workers[w] = hw
		g.hybrid.Add(1)
	}
	s := hw.group(ev.Group.Index)
	if s == nil {
		if len(hw.groups) >= g.cfg.MaxGroups {
			return fmt.Errorf("%s: more than %d groups: %w", ev.Group, g.cfg.MaxGroups, ErrBadEvent)
		}
		s = &groupState{g: ev.Group, blocks: map[uint64]groupBlock{}, held: newHtable(0)}
		i, _ := slices.BinarySearchFunc(hw.groups, ev.Group.Index, func(x *groupState, k uint32) int { return cmp.Compare(x.g.Index, k) })
		hw.groups = slices.Insert(hw.groups, i, s)
	} else if s.g.Kind != ev.Group.Kind {
		return fmt.Errorf("%s: group %d is %s: %w", ev.Group, s.g.Index, s.g.Kind, ErrBadEvent)
	}
	if ev.Group.Window != 0 {
		s.g.Window = ev.Group.Window
	}
	if len(ev.Blocks) == 0 {
		return nil
	}
	if !g.storeGroup(w, hw, s, ev) {
		if len(hw.pending) >= g.cfg.MaxPending {
			hw.pending = hw.pending[1:]
			g.dropped++
		}
		p := *ev
		p.Blocks = slices.Clone(ev.Blocks)
		hw.pending = append(hw.pending, p)
		g.parked++
		return nil
	}
	g.retryPending(w, hw)
	return nil
}

// storeGroup stores ev's blocks in s when their parent resolves and
// reports whether it did.
func (g *Groups) storeGroup(w kvevents.Worker, hw *hybridWorker, s *groupState, ev *kvevents.Event) bool {
	id, root := uint64(0), !ev.HasParent || ev.Parent == 0
	if !root {
		var ok bool
		if id, ok = g.resolve(w, hw, ev.Parent); !ok {
			return false
		}
	}
	parent, hasParent := ev.Parent, !root
	for _, b := range ev.Blocks {
		if x, ok := s.blocks[b.Hash]; ok {
			id = x.id // held already: the chain goes on under it
		} else {
			if root {
				id = b.Local
			} else {
				id = kvhash.PrefixNext(id, b.Local)
			}
			s.blocks[b.Hash] = groupBlock{id: id, local: b.Local, parent: parent, hasParent: hasParent}
			n, _ := s.held.get(id)
			s.held.put(id, n+1)
		}
		root, parent, hasParent = false, b.Hash, true
	}
	return true
}

// resolve returns the prefix id of the block worker w names hash: one of
// its groups', else the inner index's.
func (g *Groups) resolve(w kvevents.Worker, hw *hybridWorker, hash uint64) (uint64, bool) {
	for _, s := range hw.groups {
		if b, ok := s.blocks[hash]; ok {
			return b.id, true
		}
	}
	if g.res != nil {
		return g.res.PrefixOf(w, hash)
	}
	return 0, false
}

// retryPending stores the pending stores whose parent now resolves, until
// none does (g.mu held).
func (g *Groups) retryPending(w kvevents.Worker, hw *hybridWorker) {
	for progress := true; progress && len(hw.pending) > 0; {
		progress = false
		for i := 0; i < len(hw.pending); i++ {
			ev := &hw.pending[i]
			s := hw.group(ev.Group.Index)
			if s != nil && g.storeGroup(w, hw, s, ev) {
				hw.pending = slices.Delete(hw.pending, i, i+1)
				progress = true
				i--
			}
		}
	}
}

func (hw *hybridWorker) group(index uint32) *groupState {
	if hw == nil {
		return nil
	}
	for _, s := range hw.groups {
		if s.g.Index == index {
			return s
		}
	}
	return nil
}

// drop removes the block named hash and reports whether s held it.
func (s *groupState) drop(hash uint64) bool {
	b, ok := s.blocks[hash]
	if !ok {
		return false
	}
	delete(s.blocks, hash)
	if n, _ := s.held.get(b.id); n > 1 {
		s.held.put(b.id, n-1)
	} else {
		s.held.del(b.id)
	}
	return true
}

// RemoveWorker implements Index.
func (g *Groups) RemoveWorker(id uint64) {
	g.inner.RemoveWorker(id)
	if g.hybrid.Load() == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for w := range g.workers {
		if w.ID == id {
			delete(g.workers, w)
			g.hybrid.Add(-1)
		}
	}
}

// PrefixOf implements PrefixResolver: the inner index's.
func (g *Groups) PrefixOf(w kvevents.Worker, hash uint64) (uint64, bool) {
	if g.res == nil {
		return 0, false
	}
	return g.res.PrefixOf(w, hash)
}

// GroupStats are Groups' figures in Stats.Groups.
type GroupStats struct {
	Workers       int    `json:"workers"`        // hybrid worker+ranks
	SlidingBlocks int    `json:"sliding_blocks"` // (worker+rank, group, block) triples of sliding groups
	StateBlocks   int    `json:"state_blocks"`   // the same of state groups
	Pending       int    `json:"pending"`        // stores waiting for their parent
	Parked        uint64 `json:"parked"`         // stores ever held pending
	Dropped       uint64 `json:"dropped"`        // pending stores dropped over the bound
}

// Stats implements Index: the inner index's, with the group events
// counted in Applied, Rejected and UnknownRemove, and Groups set once a
// worker turned hybrid.
func (g *Groups) Stats() Stats {
	st := g.inner.Stats()
	g.mu.RLock()
	defer g.mu.RUnlock()
	st.Applied += g.applied
	st.Rejected += g.rejected
	st.UnknownRemove += g.unknown
	if g.applied+g.rejected+g.unknown == 0 && len(g.workers) == 0 {
		return st
	}
	gs := &GroupStats{Workers: len(g.workers), Parked: g.parked, Dropped: g.dropped}
	for _, hw := range g.workers {
		gs.Pending += len(hw.pending)
		for _, s := range hw.groups {
			if s.g.Kind == kvevents.GroupSliding {
				gs.SlidingBlocks += len(s.blocks)
			} else {
				gs.StateBlocks += len(s.blocks)
			}
		}
	}
	st.Groups = gs
	return st
}

// GroupBlocks is one group's block count in WorkerGroups.
type GroupBlocks struct {
	Group  kvevents.Group `json:"-"`
	Name   string         `json:"group"` // Group.String()
	Blocks int            `json:"blocks"`
}

// WorkerGroups returns worker+rank w's non-full groups and the blocks
// each holds, by group index; nil when w is not hybrid.
func (g *Groups) WorkerGroups(w kvevents.Worker) []GroupBlocks {
	if g.hybrid.Load() == 0 {
		return nil
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	hw := g.workers[w]
	if hw == nil {
		return nil
	}
	out := make([]GroupBlocks, 0, len(hw.groups))
	for _, s := range hw.groups {
		out = append(out, GroupBlocks{Group: s.g, Name: s.g.String(), Blocks: len(s.blocks)})
	}
	return out
}

// Joint reports whether lookups credit worker+rank w its joint match
// rather than its full-attention overlap: w is hybrid and FullOnly is off.
// A caller that raises a worker's overlap from elsewhere (the router's
// predictions of blocks in flight, which know full attention alone) must
// leave such a worker's as the lookup gave it.
func (g *Groups) Joint(w kvevents.Worker) bool {
	if !g.AnyJoint() {
		return false
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.workers[w] != nil
}

// AnyJoint reports whether Joint may hold for some worker (one atomic
// load): a worker turned hybrid and FullOnly is off.
func (g *Groups) AnyJoint() bool { return !g.cfg.FullOnly && g.HasHybrid() }

// HasHybrid reports whether some worker+rank has sent a non-full group's
// event (one atomic load).
func (g *Groups) HasHybrid() bool { return g.hybrid.Load() > 0 }

// HybridWorkers returns the hybrid worker+ranks, sorted.
func (g *Groups) HybridWorkers() []kvevents.Worker {
	if g.hybrid.Load() == 0 {
		return nil
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]kvevents.Worker, 0, len(g.workers))
	for w := range g.workers {
		out = append(out, w)
	}
	slices.SortFunc(out, kvevents.Worker.Compare)
	return out
}

// Dump implements Index (see Groups for the group events).
func (g *Groups) Dump() []kvevents.Event {
	evs := g.inner.Dump()
	for _, w := range g.HybridWorkers() {
		g.mu.RLock()
		if hw := g.workers[w]; hw != nil {
			for _, s := range hw.groups {
				evs = s.dump(evs, w)
			}
		}
		g.mu.RUnlock()
	}
	return evs
}

// dump appends s's blocks as Stored events of its group (dumpWorker's
// chains; roots are the blocks whose parent s does not hold).
func (s *groupState) dump(dst []kvevents.Event, w kvevents.Worker) []kvevents.Event {
	blocks := make([]dumpBlock, 0, len(s.blocks))
	for h, b := range s.blocks {
		blocks = append(blocks, dumpBlock{hash: h, parent: b.parent, hasParent: b.hasParent, local: b.local})
	}
	n := len(dst)
	dst = dumpWorker(dst, w, blocks)
	for i := n; i < len(dst); i++ {
		dst[i].Group = s.g
	}
	return dst
}

// Check verifies the inner index (when it checks itself) and that every
// group's prefix-id counts match its blocks.
func (g *Groups) Check() error {
	if c, ok := g.inner.(interface{ Check() error }); ok {
		if err := c.Check(); err != nil {
			return err
		}
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	if int(g.hybrid.Load()) != len(g.workers) {
		return fmt.Errorf("indexer: groups count %d hybrid workers, hold %d", g.hybrid.Load(), len(g.workers))
	}
	for w, hw := range g.workers {
		for _, s := range hw.groups {
			n := map[uint64]uint32{}
			for _, b := range s.blocks {
				n[b.id]++
			}
			if !maps.Equal(n, maps.Collect(s.held.all())) {
				return fmt.Errorf("indexer: worker %s group %s: prefix-id counts differ from its blocks", w, s.g)
			}
		}
	}
	return nil
}
