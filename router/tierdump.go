package router

import (
	"context"
	"slices"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Snapshots of the cross-tier view (DESIGN.md §9). Without TierChains a
// snapshot is every tier's index dump, each event tagged with its tier.
// With TierChains the lower tiers' indexes are derived (the blocks held in
// that tier or faster, tierview.go): restoring them as raw tier events
// would record every device block as also held on the host and on disk,
// and a later device eviction would leave it credited there. DumpTiers
// therefore writes the raw record instead, the device index and each
// view's blocks per lower tier, so a restore through ApplyEvent rebuilds
// the same view and the same derived indexes.

// DumpTiers returns the router's KV record as Stored events (EventID 0,
// parents before children within a worker and tier, devices first), for
// a snapshot a restore applies through ApplyEvent. Nil outside PolicyKV.
func (r *Router) DumpTiers() []kvevents.Event {
	if r.cfg.Policy != PolicyKV {
		return nil
	}
	if !r.cfg.TierChains {
		var out []kvevents.Event
		for t, ix := range r.idx {
			n := len(out)
			out = append(out, ix.Dump()...)
			for i := n; i < len(out); i++ {
				out[i].Tier = kvevents.Tier(t)
			}
		}
		return out
	}
	out := r.idx[kvevents.TierDevice].Dump()
	for i := range out {
		out[i].Tier = kvevents.TierDevice
	}
	r.tv.mu.Lock()
	ws := make([]kvevents.Worker, 0, len(r.tv.ws))
	for w := range r.tv.ws {
		ws = append(ws, w)
	}
	views := make([]*workerView, len(ws))
	slices.SortFunc(ws, kvevents.Worker.Compare)
	for i, w := range ws {
		views[i] = r.tv.ws[w]
	}
	r.tv.mu.Unlock()
	for i, w := range ws {
		out = views[i].appendDump(out, w)
	}
	return out
}

// appendDump appends the view's lower-tier blocks to out as DumpTiers
// writes them, under the view's lock (its worker's events may be applied
// meanwhile).
func (wv *workerView) appendDump(out []kvevents.Event, w kvevents.Worker) []kvevents.Event {
	wv.mu.Lock()
	defer wv.mu.Unlock()
	order := wv.parentsFirst()
	for t := kvevents.TierHostPinned; int(t) < kvevents.NumTiers; t++ {
		bit := uint8(1) << t
		for _, h := range order {
			vb := wv.blocks[h]
			if vb.mask&bit == 0 {
				continue
			}
			out = append(out, kvevents.Event{WorkerID: w.ID, DPRank: w.Rank, Tier: t, Kind: kvevents.KindStored,
				HasParent: vb.hasParent, Parent: vb.parent, Blocks: []kvevents.Block{{Hash: h, Local: vb.local}}})
		}
	}
	return out
}

// parentsFirst lists the view's blocks with every block after its parent
// (when the parent is in the view), roots sorted by hash for a stable dump.
func (wv *workerView) parentsFirst() []uint64 {
	var roots []uint64
	for h, vb := range wv.blocks {
		if !vb.hasParent || wv.blocks[vb.parent] == nil {
			roots = append(roots, h)
		}
	}
	slices.Sort(roots)
	out := make([]uint64, 0, len(wv.blocks))
	stack := roots
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, h)
		kids := slices.Clone(wv.kids[h])
		slices.Sort(kids)
		stack = append(stack, kids...)
	}
	return out
}

// ClearKV removes every worker from every tier's index and forgets the
// cross-tier views: what a replica does before restoring a snapshot.
func (r *Router) ClearKV() {
	if r.cfg.Policy != PolicyKV {
		return
	}
	for _, ix := range r.idx {
		var ids []uint64
		for _, ev := range ix.Dump() {
			ids = append(ids, ev.WorkerID)
		}
		slices.Sort(ids)
		for _, id := range slices.Compact(ids) {
			ix.RemoveWorker(id)
		}
	}
	r.tv.mu.Lock()
	clear(r.tv.ws)
	r.tv.n.Store(0)
	r.tv.mu.Unlock()
}

// flusher is an index that applies asynchronously (indexer.Concurrent).
type flusher interface {
	Flush(ctx context.Context) error
}

// flushDevice waits until the device index applied every event handed to
// it, so a view seeded from its Dump misses none of them.
func (r *Router) flushDevice() {
	if f, ok := r.idx[kvevents.TierDevice].(flusher); ok {
		_ = f.Flush(context.Background())
	}
}
