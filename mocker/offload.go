package mocker

import (
	"slices"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// level is one enabled lower tier of an engine, in ladder order (G2, G3,
// G4): its store, the link blocks travel down into it, the link they
// travel up to G1 on, and the offload pipeline feeding it.
type level struct {
	st     *store
	shared *SharedStore // G4: events carry the store's identity
	down   Link
	up     Link
	upFree time.Duration // when the up link is next free (onboarding)
	pipe   pipeline
}

// Offload item states (DESIGN.md §7), as printed by PipelineString.
const (
	stQueued    = "queued"    // waiting for its producing pass to end
	stBatched   = "batched"   // in the open batch
	stInFlight  = "in-flight" // its batch occupies (or waits for) the link
	stCommitted = "committed"
	stCancelled = "cancelled"
)

// offItem is one block moving down into a level.
type offItem struct {
	id      uint64
	blk     tierBlock
	readyAt time.Duration // end of the producing pass (or the eviction)
	// evicted: the source tier dropped the block (write-back or cascade),
	// so it is cancelled when it is held by a faster tier again.
	evicted bool
	// producer and epoch: the write-through request whose death (cancel or
	// preemption) cancels the item.
	producer *seq
	epoch    int
}

type batch struct {
	items []*offItem
	start time.Duration // the transfer's start on the link
	end   time.Duration // commit time
}

// pipeline is the offload path into one level: policy screen (at enqueue)
// → queued until the producing pass ended → batcher → transfer → commit.
type pipeline struct {
	queued   []*offItem
	open     []*offItem
	opened   time.Duration // when the open batch got its first block
	inflight []*batch
	linkFree time.Duration
	// log records state changes for PipelineString (tests only).
	log []string
}

// PipelineStats counts offload items by outcome, over all levels.
type PipelineStats struct {
	Enqueued, Committed, Cancelled, Dropped uint64
	// Batches is the number of transfers; BlocksMoved their blocks.
	Batches, BlocksMoved uint64
}

// nextTime is the earliest time this pipeline has something to do;
// false when it is empty.
func (p *pipeline) nextTime(flushAfter time.Duration) (time.Duration, bool) {
	t, ok := time.Duration(0), false
	take := func(x time.Duration) {
		if !ok || x < t {
			t, ok = x, true
		}
	}
	for _, it := range p.queued {
		take(it.readyAt)
	}
	if len(p.open) > 0 {
		take(p.opened + flushAfter)
	}
	for _, b := range p.inflight {
		take(b.end)
	}
	return t, ok
}

// enqueue offers blk to level li's pipeline after the policy screen, at
// time at; it may go once ready (its producing pass ended).
func (e *Engine) enqueue(li int, blk tierBlock, uses int32, at, ready time.Duration, evicted bool, producer *seq) {
	if li >= len(e.levels) {
		return
	}
	lv := e.levels[li]
	if li == 0 && int(uses) < e.tiers.MinReuse {
		return // policy screen: not reused enough
	}
	if lv.st.has(blk.hash) {
		return // already there: nothing to move
	}
	e.offID++
	it := &offItem{id: e.offID, blk: blk, readyAt: ready, evicted: evicted, producer: producer}
	if producer != nil {
		it.epoch = producer.epoch
	}
	lv.pipe.queued = append(lv.pipe.queued, it)
	e.pstats.Enqueued++
	e.logItem(lv, it, at, stQueued, "")
}

// cancelReason is why an item not yet in flight leaves without moving
// bytes ("" when it still goes).
func (e *Engine) cancelReason(li int, it *offItem) string {
	if s := it.producer; s != nil && (s.cancelled || s.epoch != it.epoch) {
		return "request died"
	}
	if it.evicted && e.heldAbove(li, it.blk.hash) {
		return "re-used"
	}
	if e.levels[li].st.has(it.blk.hash) {
		return "already held"
	}
	return ""
}

// heldAbove reports whether G1 or a level faster than li holds h.
func (e *Engine) heldAbove(li int, h uint64) bool {
	if _, ok := e.pool.byHash[h]; ok {
		return true
	}
	for k := 0; k < li; k++ {
		if e.levels[k].st.has(h) {
			return true
		}
	}
	return false
}

// advance runs every level's pipeline up to simulated time t, in time
// order across levels (a commit's evictions cascade into the next level).
func (e *Engine) advance(t time.Duration) {
	if len(e.levels) == 0 {
		return
	}
	for {
		best, bi := time.Duration(0), -1
		for i, lv := range e.levels {
			if x, ok := lv.pipe.nextTime(e.tiers.FlushAfter); ok && x <= t && (bi < 0 || x < best) {
				best, bi = x, i
			}
		}
		if bi < 0 {
			return
		}
		e.runLevel(bi, best)
	}
}

// runLevel does everything level li has due at time now: commits, then
// arrivals into the batch, then flushes.
func (e *Engine) runLevel(li int, now time.Duration) {
	lv := e.levels[li]
	p := &lv.pipe
	// Commits, in end order.
	slices.SortStableFunc(p.inflight, func(a, b *batch) int { return cmpDur(a.end, b.end) })
	for len(p.inflight) > 0 && p.inflight[0].end <= now {
		b := p.inflight[0]
		p.inflight = p.inflight[1:]
		e.commit(li, b)
	}
	// Arrivals into the open batch.
	kept := p.queued[:0]
	var arrived []*offItem
	for _, it := range p.queued {
		if it.readyAt <= now {
			arrived = append(arrived, it)
		} else {
			kept = append(kept, it)
		}
	}
	clear(p.queued[len(kept):])
	p.queued = kept
	for _, it := range arrived {
		if why := e.cancelReason(li, it); why != "" {
			e.cancel(lv, it, now, why)
			continue
		}
		if len(p.open) == 0 {
			p.opened = now
		}
		p.open = append(p.open, it)
		e.logItem(lv, it, now, stBatched, "")
	}
	// Flush at FlushBlocks (batches capped at MaxBatch), or after
	// FlushAfter.
	for len(p.open) >= e.tiers.FlushBlocks {
		e.flush(li, now, min(len(p.open), e.tiers.MaxBatch))
	}
	if len(p.open) > 0 && p.opened+e.tiers.FlushAfter <= now {
		e.flush(li, now, min(len(p.open), e.tiers.MaxBatch))
	}
}

// flush sends the open batch's first n items: cancellable ones leave
// without moving bytes, the rest occupy the link.
func (e *Engine) flush(li int, now time.Duration, n int) {
	lv := e.levels[li]
	p := &lv.pipe
	items := make([]*offItem, 0, n)
	for _, it := range p.open[:n] {
		if why := e.cancelReason(li, it); why != "" {
			e.cancel(lv, it, now, why)
			continue
		}
		items = append(items, it)
	}
	p.open = slices.Delete(p.open, 0, n)
	if len(p.open) > 0 {
		p.opened = now
	}
	if len(items) == 0 {
		return
	}
	// Parents first, so a committed run chains in one event.
	slices.SortStableFunc(items, func(a, b *offItem) int { return int(a.blk.pos) - int(b.blk.pos) })
	start := max(now, p.linkFree)
	b := &batch{items: items, start: start, end: start + e.scale(lv.down.Transfer(len(items), e.blockBytes))}
	p.linkFree = b.end
	p.inflight = append(p.inflight, b)
	e.pstats.Batches++
	e.pstats.BlocksMoved += uint64(len(items))
	for _, it := range items {
		e.logItem(lv, it, now, stInFlight, "")
	}
}

func (e *Engine) cancel(lv *level, it *offItem, now time.Duration, why string) {
	e.pstats.Cancelled++
	e.logItem(lv, it, now, stCancelled, why)
}

// commit stores a transferred batch in level li, emitting Stored (and
// Removed for what it evicts, which cascades to the next level).
func (e *Engine) commit(li int, b *batch) {
	lv := e.levels[li]
	var evicted []tierBlock
	var stored []tierBlock
	for _, it := range b.items {
		var ok bool
		ok, evicted = lv.st.insert(it.blk, evicted)
		if !ok {
			// Held meanwhile, or every block pinned: the bytes moved
			// for nothing.
			e.pstats.Dropped++
			e.logItem(lv, it, b.end, stCancelled, "no room or held")
			continue
		}
		e.pstats.Committed++
		stored = append(stored, it.blk)
		e.logItem(lv, it, b.end, stCommitted, "")
	}
	if len(evicted) > 0 {
		hs := make([]uint64, len(evicted))
		for i := range evicted {
			hs[i] = evicted[i].hash
		}
		e.emitTier(lv, kvevents.Event{Kind: kvevents.KindRemoved, Hashes: hs})
	}
	e.emitStoredRuns(lv, stored)
	for _, x := range evicted {
		e.enqueue(li+1, x, 0, b.end, b.end, true, nil)
	}
}

// emitStoredRuns announces blocks committed together, one Stored event per
// run of chained blocks. A block's parent may live in a faster tier: the
// prefix chain is one chain across tiers (DESIGN.md §2, §7).
func (e *Engine) emitStoredRuns(lv *level, blks []tierBlock) {
	for i := 0; i < len(blks); {
		j := i + 1
		for j < len(blks) && blks[j].hasParent && blks[j].parent == blks[j-1].hash {
			j++
		}
		ev := kvevents.Event{Kind: kvevents.KindStored, HasParent: blks[i].hasParent, Parent: blks[i].parent,
			HasStart: true, StartPosition: blks[i].pos}
		ev.Blocks = make([]kvevents.Block, j-i)
		for k := i; k < j; k++ {
			ev.Blocks[k-i] = kvevents.Block{Hash: blks[k].hash, Local: blks[k].local}
		}
		e.emitTier(lv, ev)
		i = j
	}
}

// emitTier stamps and records a lower-tier event: the engine's identity
// and event ids, or the shared store's for G4.
func (e *Engine) emitTier(lv *level, ev kvevents.Event) {
	ev.Tier = lv.st.tier
	if s := lv.shared; s != nil {
		ev.WorkerID, ev.DPRank, ev.EventID = s.worker.ID, s.worker.Rank, s.eventID
		s.eventID++
	} else {
		ev.WorkerID, ev.DPRank, ev.EventID = e.cfg.Worker.ID, e.cfg.Worker.Rank, e.eventID
		e.eventID++
	}
	e.events = append(e.events, ev)
}

func (e *Engine) logItem(lv *level, it *offItem, now time.Duration, state, why string) {
	if !e.traceOffload {
		return
	}
	s := now.String() + " " + lv.st.tier.String() + " " + ShortHash(it.blk.hash) + " " + state
	if why != "" {
		s += " (" + why + ")"
	}
	lv.pipe.log = append(lv.pipe.log, s)
}

// scale converts a modeled transfer time to simulated time, like pass
// times (Config.SpeedupRatio).
func (e *Engine) scale(d time.Duration) time.Duration {
	if e.cfg.SpeedupRatio > 0 {
		return time.Duration(float64(d) / e.cfg.SpeedupRatio)
	}
	return d
}

func cmpDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Advance runs the offload pipeline up to simulated time now without a
// forward pass (an idle engine's transfers still commit) and returns the
// KV events that produced; Step does the same at each pass's start. It
// never moves the engine's clock backwards.
func (e *Engine) Advance(now time.Duration) []kvevents.Event {
	now = max(now, e.clock)
	e.clock = now
	e.events = nil
	e.written = e.written[:0]
	e.passStart = now
	e.advance(now)
	e.finishLoads(now)
	e.offerWritten(now)
	evs := e.events
	e.events = nil
	e.maybeCheck()
	return evs
}

// NextOffload is the earliest simulated time the offload pipeline has work
// due; false when it is empty.
func (e *Engine) NextOffload() (time.Duration, bool) {
	t, ok := time.Duration(0), false
	for _, lv := range e.levels {
		if x, k := lv.pipe.nextTime(e.tiers.FlushAfter); k && (!ok || x < t) {
			t, ok = x, true
		}
	}
	return t, ok
}

// PipelineStats returns the offload counters.
func (e *Engine) PipelineStats() PipelineStats { return e.pstats }

// offerWritten offers the blocks cached since the pass began to the
// pipeline (write-through), ready at t: the end of their producing pass.
func (e *Engine) offerWritten(t time.Duration) {
	for _, w := range e.written {
		if bl := &e.pool.blocks[w.b]; bl.cached {
			e.enqueue(0, blockTier(bl), bl.uses, e.passStart, t, false, w.s)
		}
	}
	e.written = e.written[:0]
}
