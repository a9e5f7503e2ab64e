package router

import (
	"sync"
	"sync/atomic"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
)

// Tiers meet here (DESIGN.md §2, §7). A worker's KV is one prefix chain
// across tiers: a host-tier block's parent may live on the device, because
// G1 evicts (and offloads) a sequence's tail before its prefix. The
// indexes hold prefix-closed sets per worker (DESIGN.md §3), so a
// lower-tier store whose parent is only in a faster tier cannot be applied
// to its tier's index as is. The router therefore keeps, for every worker
// that sent a lower-tier event, a view of which tiers hold each of its
// blocks, and feeds the lower-tier indexes derived events:
//
//   - index host_pinned holds the worker's blocks held on the device or the
//     host, and index disk those held on the device, the host or disk (the
//     "reachable by tier t or faster" sets), each as a prefix-closed chain;
//   - index external holds the G4 store's blocks (under the store's own
//     identity) as a prefix-closed chain.
//
// A block whose parent is not (yet) in that set waits in the view and
// joins the index when its parent does. Overlaps then read: device d,
// host-or-faster h >= d, disk-or-faster k >= h, and selector's credit
// (best weight per block) charges [0,d) at the device weight, [d,h) at the
// host weight and [h,k) at the disk weight: a block held in several tiers
// is credited once, at its best tier. A block on the device beyond the
// device prefix but inside a host run is credited at the host weight (the
// engine stages the run from the host).
//
// The device index is fed the events as they come. A worker's view
// starts at its first lower-tier event, seeded with its device blocks from
// the device index's Dump; until then lower-tier indexes hold nothing of it.

// viewTiers are the derived indexes and which tiers' blocks each holds.
var viewTiers = [...]struct {
	t    kvevents.Tier
	from uint8 // tier bit mask
}{
	{kvevents.TierHostPinned, 1<<kvevents.TierDevice | 1<<kvevents.TierHostPinned},
	{kvevents.TierDisk, 1<<kvevents.TierDevice | 1<<kvevents.TierHostPinned | 1<<kvevents.TierDisk},
	{kvevents.TierExternal, 1 << kvevents.TierExternal},
}

type viewBlock struct {
	local, parent uint64
	hasParent     bool
	mask          uint8 // tiers holding the block
	placed        uint8 // bit i: in viewTiers[i]'s index
}

type workerView struct {
	// mu guards the view: its worker's events write it (one goroutine at
	// a time), DumpTiers reads it from another.
	mu     sync.Mutex
	blocks map[uint64]*viewBlock
	kids   map[uint64][]uint64 // parent hash -> children hashes
	ids    [len(viewTiers)]uint64
}

type tierView struct {
	mu sync.Mutex
	ws map[kvevents.Worker]*workerView
	n  atomic.Int32 // len(ws): with none the derived indexes are empty
}

// get returns w's view, seeding a new one from the device index when
// create is set; nil when w has none and create is false.
func (r *Router) view(w kvevents.Worker, create bool) *workerView {
	v := &r.tv
	v.mu.Lock()
	wv := v.ws[w]
	v.mu.Unlock()
	if wv != nil || !create {
		return wv
	}
	wv = &workerView{blocks: map[uint64]*viewBlock{}, kids: map[uint64][]uint64{}}
	// An asynchronous device index may still hold w's earlier events in
	// its queue: they went by with no view to record them.
	r.flushDevice()
	for _, ev := range r.idx[kvevents.TierDevice].Dump() {
		if ev.Worker() != w {
			continue
		}
		ev.Tier = kvevents.TierDevice
		r.viewStore(wv, &ev)
	}
	v.mu.Lock()
	if v.ws == nil {
		v.ws = map[kvevents.Worker]*workerView{}
	}
	v.ws[w] = wv
	v.n.Store(int32(len(v.ws)))
	v.mu.Unlock()
	return wv
}

// applyTiered applies ev through the view (see above): device events go
// to the device index too, host and disk events only to the derived
// indexes. It returns the raw index's error for device events; lower-tier
// events are never rejected for an unknown parent (they wait).
func (r *Router) applyTiered(ev *kvevents.Event) error {
	w := ev.Worker()
	lower := ev.Tier != kvevents.TierDevice
	if ev.Group.Kind != kvevents.GroupFull && ev.Kind != kvevents.KindCleared {
		// The cross-tier view chains full attention: a sliding or state
		// group's blocks are the device index's (its Groups overlay), and
		// lower tiers hold full attention only.
		if lower {
			return indexer.ErrGroupEvent
		}
		return r.idx[kvevents.TierDevice].Apply(ev)
	}
	wv := r.view(w, lower)
	var err error
	if !lower {
		err = r.idx[kvevents.TierDevice].Apply(ev)
		if err != nil || wv == nil {
			return err
		}
	}
	wv.mu.Lock()
	defer wv.mu.Unlock()
	switch ev.Kind {
	case kvevents.KindStored:
		if ev.HasParent && ev.Parent != 0 { // parent 0 reads as none (indexer package doc)
			for _, b := range ev.Blocks {
				if b.Hash == ev.Parent {
					return indexer.ErrSelfParent
				}
			}
		}
		r.viewStore(wv, ev)
	case kvevents.KindRemoved:
		var rm removals
		for _, h := range ev.Hashes {
			r.viewRemove(wv, h, ev.Tier, &rm)
		}
		r.applyRemovals(wv, w, &rm)
	case kvevents.KindCleared:
		var rm removals
		bit := uint8(1) << ev.Tier
		for h, b := range wv.blocks {
			if b.mask&bit != 0 {
				r.viewRemove(wv, h, ev.Tier, &rm)
			}
		}
		r.applyRemovals(wv, w, &rm)
	default:
		return indexer.ErrBadEvent
	}
	return err
}

// viewStore records ev's blocks in tier ev.Tier and places those that
// became reachable.
func (r *Router) viewStore(wv *workerView, ev *kvevents.Event) {
	bit := uint8(1) << ev.Tier
	parent, hasParent := ev.Parent, ev.HasParent && ev.Parent != 0
	w := ev.Worker()
	for _, b := range ev.Blocks {
		vb := wv.blocks[b.Hash]
		if vb == nil {
			vb = &viewBlock{local: b.Local, parent: parent, hasParent: hasParent}
			wv.blocks[b.Hash] = vb
			if hasParent {
				wv.kids[parent] = append(wv.kids[parent], b.Hash)
			}
		}
		if vb.mask&bit == 0 {
			vb.mask |= bit
			for i := range viewTiers {
				if viewTiers[i].from&bit != 0 {
					r.place(wv, w, i, b.Hash)
				}
			}
		}
		parent, hasParent = b.Hash, true
	}
}

// place adds h (and its waiting descendants) to derived index i when its
// parent is there.
func (r *Router) place(wv *workerView, w kvevents.Worker, i int, h uint64) {
	vt := &viewTiers[i]
	stack := []uint64{h}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		vb := wv.blocks[h]
		if vb == nil || vb.placed&(1<<i) != 0 || vb.mask&vt.from == 0 {
			continue
		}
		if vb.hasParent {
			p := wv.blocks[vb.parent]
			if p == nil || p.placed&(1<<i) == 0 {
				continue // waits for its parent
			}
		}
		ev := kvevents.Event{WorkerID: w.ID, DPRank: w.Rank, Tier: vt.t, Kind: kvevents.KindStored, EventID: wv.ids[i],
			HasParent: vb.hasParent, Parent: vb.parent, Blocks: []kvevents.Block{{Hash: h, Local: vb.local}}}
		wv.ids[i]++
		if r.idx[vt.t].Apply(&ev) != nil {
			continue // the index refused it: it stays waiting
		}
		vb.placed |= 1 << i
		stack = append(stack, wv.kids[h]...)
	}
}

// removals are the hashes leaving each derived index during one event,
// applied as one Removed event per index (an index's remove scans the
// worker's blocks for descendants: once per event, not per hash).
type removals [len(viewTiers)][]uint64

func (r *Router) applyRemovals(wv *workerView, w kvevents.Worker, rm *removals) {
	for i, hs := range rm {
		if len(hs) == 0 {
			continue
		}
		ev := kvevents.Event{WorkerID: w.ID, DPRank: w.Rank, Tier: viewTiers[i].t, Kind: kvevents.KindRemoved, EventID: wv.ids[i], Hashes: hs}
		wv.ids[i]++
		_ = r.idx[viewTiers[i].t].Apply(&ev)
	}
}

// viewRemove drops tier t from h; a block leaving a derived index's set
// leaves that index (through rm) with its placed descendants, which wait
// there again.
func (r *Router) viewRemove(wv *workerView, h uint64, t kvevents.Tier, rm *removals) {
	vb := wv.blocks[h]
	bit := uint8(1) << t
	if vb == nil || vb.mask&bit == 0 {
		return
	}
	vb.mask &^= bit
	for i := range viewTiers {
		vt := &viewTiers[i]
		if vb.mask&vt.from != 0 || vb.placed&(1<<i) == 0 {
			continue
		}
		rm[i] = append(rm[i], h)
		// The index drops h's subtree: mark it unplaced.
		stack := []uint64{h}
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if xb := wv.blocks[x]; xb != nil && xb.placed&(1<<i) != 0 {
				xb.placed &^= 1 << i
				stack = append(stack, wv.kids[x]...)
			}
		}
	}
	if vb.mask == 0 {
		delete(wv.blocks, h)
		if vb.hasParent {
			ks := wv.kids[vb.parent]
			for j, k := range ks {
				if k == h {
					ks[j] = ks[len(ks)-1]
					ks = ks[:len(ks)-1]
					break
				}
			}
			if len(ks) == 0 {
				delete(wv.kids, vb.parent)
			} else {
				wv.kids[vb.parent] = ks
			}
		}
	}
}

// dropView forgets a worker's views (every rank).
func (r *Router) dropView(id uint64) {
	r.tv.mu.Lock()
	for w := range r.tv.ws {
		if w.ID == id {
			delete(r.tv.ws, w)
		}
	}
	r.tv.n.Store(int32(len(r.tv.ws)))
	r.tv.mu.Unlock()
}
