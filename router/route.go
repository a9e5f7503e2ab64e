package router

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/loads"
	"github.com/kvrouter/kvrouter/queue"
	"github.com/kvrouter/kvrouter/selector"
)

type outcome uint8

const (
	dispatched outcome = iota
	queued
	wait // Release: the head must keep waiting
)

// routeLocked decides p at now. A fresh request (from Route) may be queued;
// a released one (from Release) reports wait instead. r.mu is held.
func (r *Router) routeLocked(p *pending, now time.Time, fresh bool) (Decision, bool, error) {
	d, oc, err := r.decideLocked(p, now, fresh)
	return d, oc == queued, err
}

// decideLocked decides p with the overlaps in p.ov (PolicyKV; PolicyApprox
// looks up here).
func (r *Router) decideLocked(p *pending, now time.Time, fresh bool) (Decision, outcome, error) {
	ov := &p.ov
	req := &p.req
	if fresh {
		if _, _, ok := r.loads.Request(req.ID); ok || (r.queue != nil && r.queue.Contains(req.ID)) {
			return Decision{}, dispatched, fmt.Errorf("%w: request %q is already active", ErrBadRequest, req.ID)
		}
	}
	if r.cfg.Policy == PolicyApprox && r.wantsOverlap(req) && len(p.locals) > 0 {
		if a, ok := r.approx.(approxSeq); ok {
			ov[kvevents.TierDevice] = a.AppendMatchesSeq(ov[kvevents.TierDevice][:0], p.seq, now)
		} else if a, ok := r.approx.(approxAppender); ok {
			ov[kvevents.TierDevice] = a.AppendMatches(ov[kvevents.TierDevice][:0], p.locals, now)
		} else {
			ov[kvevents.TierDevice] = r.approx.FindMatches(p.locals, now)
		}
	}
	if r.predict != nil && r.wantsOverlap(req) && len(p.locals) > 0 {
		r.predicted = r.predict.AppendMatchesSeq(r.predicted[:0], p.ids, now)
		if g := r.jointGroups(); g != nil {
			// A prediction knows full attention alone: a hybrid worker
			// is credited its event-fed joint match (DESIGN.md §13).
			r.predicted = dropJoint(r.predicted, g)
		}
		ov[kvevents.TierDevice] = mergeMax(ov[kvevents.TierDevice], r.predicted, &r.merged)
	}
	outBlocks := r.outputBlocks(req)
	cands := r.candidates(p, ov, outBlocks, now)
	// The filters are function values, so a local Request would escape.
	sreq := &r.sreq
	*sreq = selector.Request{ISL: p.isl, BlockSize: r.cfg.BlockSize, Constraints: req.Constraints, Overrides: req.Overrides, LoRA: req.LoRA,
		Utilization: r.utilization(len(cands), r.candBusy, r.candStep, now)}
	if r.feat.tailGuard {
		sreq.TailTTFT = r.tail[req.Hop].Value()
	}
	if req.Hop == HopDecode && r.cfg.Disagg.TransferWeight > 0 && sreq.Overrides.TransferWeight == nil {
		sreq.Overrides.TransferWeight = &r.cfg.Disagg.TransferWeight
	}

	if r.queue != nil {
		if fresh && r.queue.Len() > 0 {
			return r.enqueueLocked(p, cands, now)
		}
		if r.saturated(sreq, cands) {
			if fresh {
				return r.enqueueLocked(p, cands, now)
			}
			return Decision{}, wait, nil
		}
	}
	// The breakdowns become Decision.Candidates: the one allocation.
	r.reasons = slices.Grow(r.reasons[:0], len(cands))[:len(cands)]
	var res selector.Result
	var err error
	if r.cfg.Policy.blind() {
		res.Chosen, res.Breakdowns, err = r.pickBlindLocked(sreq, cands, r.breakdowns(req, len(cands)), &r.rr[req.Hop])
	} else {
		res, err = r.sel.SelectInto(sreq, cands, r.rng, r.breakdowns(req, len(cands)), r.reasons)
		if req.Inputs != nil && err == nil {
			req.Inputs.fill(r.sel.Config(), sreq, cands, res.Chosen)
		}
	}
	if err != nil {
		if r.queue != nil && errors.Is(err, selector.ErrAllOverloaded) {
			if fresh {
				return r.enqueueLocked(p, cands, now)
			}
			return Decision{}, wait, nil
		}
		return Decision{RequestID: req.ID, ISL: p.isl, Blocks: len(p.locals), Candidates: res.Breakdowns},
			dispatched, fmt.Errorf("router: request %q: %w", req.ID, err)
	}
	if r.feat.tailGuard {
		r.observeTail(req.Hop, res.Breakdowns)
	}
	chosen, aff := res.Chosen, false
	if r.cfg.Affinity.Enabled && req.Session != "" {
		if w, ok := r.aff.Get(req.Session, now); ok {
			for i := range cands {
				if cands[i].Worker == w && res.Breakdowns[i].Out == selector.ReasonNone {
					chosen, aff = i, true
					r.stats.AffinityHits++
					break
				}
			}
		}
	}
	d, oc, err := r.commitLocked(p, &cands[chosen], res.Breakdowns, chosen, aff, outBlocks, now)
	d.Waited, d.Inputs = !fresh, req.Inputs
	return d, oc, err
}

// candidates builds one selector.Candidate per rank, in rank order, in
// r.cands (valid until the next call).
func (r *Router) candidates(p *pending, ov *[kvevents.NumTiers]indexer.Overlaps, outBlocks int, now time.Time) []selector.Candidate {
	n := len(r.ranks)
	cands := slices.Grow(r.cands[:0], n)[:n]
	r.cands = cands
	nb := r.loads.NewBlocksBySlot(p.ids, r.newBlocks)
	r.newBlocks = nb
	// The active prefix of a rank is its prompt blocks minus the new ones
	// (the active set is prefix-closed): resident while the requests run.
	active := r.cfg.Policy == PolicyKV && r.cfg.Predict.Active && r.wantsOverlap(&p.req)
	// A running request holds its full-attention blocks, not a hybrid
	// worker's windows or state checkpoints: no active credit there.
	var joint *indexer.Groups
	if active {
		joint = r.jointGroups()
	}
	ua := r.rankUtilStep(now)
	r.candStep = ua
	// G4 is one store for the fleet: every worker can onboard its
	// longest chain.
	ext := 0
	for _, o := range ov[kvevents.TierExternal] {
		ext = max(ext, o.Blocks)
	}
	nids := len(p.ids)
	// The router's fields in locals: the stores through c could alias
	// them, so each would be reloaded per candidate.
	tr, refs, hop := r.loads, r.rankRefs, p.req.Hop
	arrivals := r.feat.passArrivals
	wall := wallClock(now) // the passes' times through sinceMs
	// Every rank's slot indexes the running utilizations: grown here,
	// not tested per rank.
	if ns := tr.Slots(); len(r.utilW) < ns {
		r.utilW = append(r.utilW, make([]float64, ns-len(r.utilW))...)
	}
	utilW := r.utilW
	k := 0    // candidates kept: the ranks whose role serves the hop
	busy := 0 // of those, the ranks with a request in prefill
	for i := range refs {
		w, ws, s := refs[i].w, refs[i].ws, refs[i].slot
		if !ws.info.Role.Serves(hop) {
			continue
		}
		l := tr.LoadAt(int(s))
		c := &cands[k]
		k++
		// Field by field: a composite literal would be built and then
		// copied with a write barrier for Labels.
		c.Worker = w
		c.Labels = ws.info.Labels
		c.LoRAKnown, c.LoRAs, c.MaxLoRAs = ws.info.LoRAKnown, ws.info.LoRAs, ws.info.MaxLoRAs
		c.MaxNumBatchedTokens = ws.info.MaxNumBatchedTokens
		c.MaxNumSeqs = ws.info.MaxNumSeqs
		c.SlotWait = r.fin.slotWait(int(s), l.Requests, c.MaxNumSeqs)
		c.ActivePrefillTokens = l.PrefillTokens
		c.ActiveDecodeBlocks = l.DecodeBlocks
		c.ActiveRequests = l.Requests
		c.PrefillRequests = l.PrefillRequests
		c.TotalKVBlocks = ws.info.TotalKVBlocks
		c.NewBlocks = nb[s] + outBlocks
		c.Timing = ws.timing
		inPrefill := l.PrefillRequests > 0
		if inPrefill {
			busy++
		}
		c.Utilization = rankUtil(utilW, s, inPrefill, ua)
		start, tokens := tr.PassParts(int(s))
		c.PassKnown, c.PassElapsed, c.PassTokens = !start.IsZero(), 0, tokens
		if c.PassKnown {
			c.PassElapsed = sinceMs(now, start, wall)
		}
		// Nil without the feature: the pending prefill came at once.
		if !arrivals {
			c.PassQueue = nil
		} else {
			c.PassQueue = c.PassQueue[:0]
			for _, a := range tr.PassArrivals(int(s)) {
				c.PassQueue = append(c.PassQueue, selector.PassArrival{Ago: sinceMs(now, a.At, wall), Tokens: a.Tokens})
			}
		}
		if int(w.Rank) < len(ws.links) {
			linkBacklog(ws, w.Rank, now, c)
		} else {
			// No load booked on the rank: no call, which would spill
			// the loop's registers.
			c.LinkBacklog = [kvevents.NumTiers]float64{}
		}
		switch {
		case ws.hasMet[w.Rank]:
			c.KVUsage = ws.metrics[w.Rank].KVUsage
		case ws.info.TotalKVBlocks > 0:
			c.KVUsage = float64(l.DecodeBlocks) / float64(ws.info.TotalKVBlocks)
		default:
			c.KVUsage = -1
		}
		// The tiers' lists are merged in below, each in a loop of its
		// own: merged here, their positions and slices would not fit in
		// registers beside this loop's, which then spilled every one.
		od := 0
		if active && (joint == nil || !joint.Joint(w)) {
			od = max(0, nids-nb[s])
		}
		c.Overlap = [kvevents.NumTiers]int{od, 0, 0, ext}
	}
	cands = cands[:k]
	r.candBusy = busy
	mergeDevice(cands, ov[kvevents.TierDevice], active)
	mergeOverlaps(cands, ov[kvevents.TierHostPinned], kvevents.TierHostPinned, false)
	mergeOverlaps(cands, ov[kvevents.TierDisk], kvevents.TierDisk, false)
	return cands
}

// mergeOverlaps sets tier t's overlap of every candidate to its blocks in
// o (keep: the larger of those and the overlap already set). Both are
// sorted by worker.
func mergeOverlaps(cands []selector.Candidate, o indexer.Overlaps, t kvevents.Tier, keep bool) {
	pos := 0
	for i := 0; i < len(cands) && pos < len(o); i++ {
		c := &cands[i]
		var b int
		if b, pos = overlapOf(o, pos, c.Worker); keep {
			b = max(b, c.Overlap[t])
		}
		c.Overlap[t] = b
	}
}

// mergeDevice is mergeOverlaps for the device tier, the list most
// workers are in: its tier a constant, so no bounds test and address
// computation per candidate.
func mergeDevice(cands []selector.Candidate, o indexer.Overlaps, keep bool) {
	pos := 0
	for i := 0; i < len(cands) && pos < len(o); i++ {
		c := &cands[i]
		var b int
		if b, pos = overlapOf(o, pos, c.Worker); keep {
			b = max(b, c.Overlap[kvevents.TierDevice])
		}
		c.Overlap[kvevents.TierDevice] = b
	}
}

// overlapOf returns w's blocks in o (0: none) and the position in o to
// start the next worker's search from: o is sorted by worker and so are
// the workers searched (each once).
func overlapOf(o indexer.Overlaps, pos int, w kvevents.Worker) (int, int) {
	// Past a match: the next worker's entry, when it has one (a prefix
	// most workers hold), is then found without an ordering test.
	if pos < len(o) && o[pos].Worker == w {
		return o[pos].Blocks, pos + 1
	}
	for pos < len(o) && o[pos].Worker.Less(w) {
		pos++
	}
	if pos < len(o) && o[pos].Worker == w {
		return o[pos].Blocks, pos + 1
	}
	return 0, pos
}

// slabBytes is the size of the slabs Decision.Candidates are cut from.
const slabBytes = 64 << 10

// breakdowns returns an n-element slice for Decision.Candidates, for the
// selector to overwrite: the caller's Request.Candidates if it is large
// enough, else cut from a slab shared by a few consecutive decisions (one
// allocation per slab instead of one span-sized allocation per decision;
// a slab lives while any of its decisions is referenced, a few tens of
// KB).
func (r *Router) breakdowns(req *Request, n int) []selector.Breakdown {
	if cap(req.Candidates) >= n {
		// Not cleared: SelectInto and pickBlindLocked write every field
		// of every breakdown (at 64 workers, clearing them first was 11
		// KB of stores per decision).
		return req.Candidates[:n:n]
	}
	if len(r.slab) < n {
		k := max(1, slabBytes/(n*int(unsafe.Sizeof(selector.Breakdown{}))))
		r.slab = make([]selector.Breakdown, k*n)
	}
	bs := r.slab[:n:n]
	r.slab = r.slab[n:]
	return bs
}

// saturated reports whether every candidate passing the hard constraints
// has active prefill tokens above Threshold * max_num_batched_tokens (a
// rank with unknown max is never saturated; no eligible rank: not
// saturated, Select reports the error).
func (r *Router) saturated(sreq *selector.Request, cands []selector.Candidate) bool {
	r.reasons = slices.Grow(r.reasons[:0], len(cands))[:len(cands)]
	out := r.reasons
	clear(out)
	r.sel.Eligible(sreq, cands, out)
	t, any := r.cfg.Queue.Threshold, false
	for i := range cands {
		if out[i] != selector.ReasonNone && !out[i].Overload() {
			continue
		}
		any = true
		c := &cands[i]
		if c.MaxNumBatchedTokens <= 0 || float64(c.ActivePrefillTokens) <= t*float64(c.MaxNumBatchedTokens) {
			return false
		}
	}
	return any
}

func (r *Router) enqueueLocked(p *pending, cands []selector.Candidate, now time.Time) (Decision, outcome, error) {
	best := 0
	for i := range cands {
		best = max(best, cachedBlocks(&cands[i].Overlap))
	}
	uncached := max(0, p.isl-best*r.cfg.BlockSize)
	err := r.queue.Push(r.tenant(&p.req), queue.Item[*pending]{ID: p.req.ID, Priority: p.req.Priority, Arrival: now, Uncached: uncached, Value: p})
	if err != nil {
		if errors.Is(err, queue.ErrFull) {
			return Decision{}, dispatched, fmt.Errorf("router: request %q: %w: %w", p.req.ID, selector.ErrAllOverloaded, err)
		}
		return Decision{}, dispatched, fmt.Errorf("router: request %q: %w", p.req.ID, err)
	}
	r.stats.Queued++
	return Decision{RequestID: p.req.ID, Queued: true, ISL: p.isl, Blocks: len(p.locals)}, queued, nil
}

// cachedBlocks is the deepest prefix held in any credited tier (external
// is looked up only when credited).
func cachedBlocks(ov *[kvevents.NumTiers]int) int {
	return max(ov[kvevents.TierDevice], ov[kvevents.TierHostPinned], ov[kvevents.TierDisk], ov[kvevents.TierExternal])
}

func (r *Router) commitLocked(p *pending, c *selector.Candidate, bs []selector.Breakdown, chosen int, aff bool, outBlocks int, now time.Time) (Decision, outcome, error) {
	B := r.cfg.BlockSize
	cached := min(p.isl, cachedBlocks(&c.Overlap)*B)
	computed := p.isl - cached
	if p.req.Hop == HopDecode {
		// Every full prompt block arrives (cached or transferred): the
		// decode worker computes only the tail (DESIGN.md §10).
		computed = p.isl - min(p.isl, len(p.locals)*B)
	}
	hint := r.peerHint(p, c, bs, chosen)
	if hint != nil {
		cached = min(p.isl, hint.Blocks*B)
		computed = p.isl - cached
	}
	e := loads.Entry{ID: p.req.ID, Worker: c.Worker, Blocks: p.ids, PrefillTokens: computed, OutputBlocks: outBlocks}
	predict := r.predict != nil && len(p.locals) > 0 && !r.predictAtEnd
	if r.deferBook {
		// Settled before anything reads the tracker or the predicted
		// index again (settle.go); e is well formed and its id not
		// active (decideLocked), so Add cannot fail.
		r.deferBooking(e, predict, now)
	} else {
		if err := r.loads.Add(e, now); err != nil {
			return Decision{}, dispatched, fmt.Errorf("router: request %q: %w", p.req.ID, err)
		}
		if predict {
			r.predict.InsertSeq(c.Worker, p.ids, now)
		}
	}
	r.bookLoads(c, now)
	if r.cfg.Policy == PolicyApprox && len(p.locals) > 0 {
		if a, ok := r.approx.(approxSeq); ok {
			a.InsertSeq(c.Worker, p.seq, now)
		} else {
			r.approx.Insert(c.Worker, p.locals, now)
		}
	}
	if r.cfg.Affinity.Enabled && p.req.Session != "" {
		r.aff.Bind(p.req.Session, c.Worker, now)
		r.sessions[p.req.ID] = p.req.Session
	}
	r.stats.Routed++
	return Decision{
		RequestID:      p.req.ID,
		Worker:         c.Worker,
		Overlap:        c.Overlap,
		Blocks:         len(p.locals),
		ISL:            p.isl,
		CachedTokens:   cached,
		PrefillTokens:  computed,
		NewBlocks:      c.NewBlocks,
		Hop:            p.req.Hop,
		TransferBlocks: transferBlocks(p.req.Hop, len(p.locals), c.Overlap[kvevents.TierDevice]),
		PeerHint:       hint,
		Cost:           bs[chosen].Cost,
		Affinity:       aff,
		Candidates:     bs,
	}, dispatched, nil
}

// Release dispatches waiting requests, best first, while the head of the
// queue is not saturated, each scored against the load at now. Call it
// after anything that frees capacity (PrefillDone, Free, Fail, Sweep,
// UpdateWorkerMetrics, AddWorker) and after a Route that queued. A
// released request that cannot run at all (ErrNoneEligible, e.g. its
// pinned worker left) comes back with Err set.
func (r *Router) Release(now time.Time) []Released {
	if r.queue == nil {
		return nil
	}
	var out []Released
	var reqs []Request
	var books []Booking
	r.lock()
	for r.queue.Len() > 0 {
		head, _, _ := r.queue.Peek()
		p := head.Value
		if r.cfg.Policy == PolicyKV && r.wantsOverlap(&p.req) {
			r.lookupKV(p) // under the lock: Release is rare
		}
		d, oc, err := r.decideLocked(p, now, false)
		if oc == wait {
			break
		}
		r.queue.Pop()
		if err != nil {
			r.stats.Rejected++
		}
		out = append(out, Released{Decision: d, Err: err})
		reqs = append(reqs, p.req)
		if err == nil {
			books = r.releasedBookings(books, p, &d)
		}
		putPending(p)
	}
	r.mu.Unlock()
	for _, b := range books {
		r.events.OnBooking(b)
	}
	for i := range out {
		switch {
		case out[i].Err != nil && r.events.OnReject != nil:
			r.events.OnReject(&reqs[i], out[i].Err)
		case out[i].Err == nil && r.events.OnRoute != nil:
			r.events.OnRoute(&reqs[i], &out[i].Decision)
		}
	}
	return out
}

// mergeMax returns, per worker, the larger overlap of a and b (both sorted
// by worker), built in *scratch and copied back over a's buffer (which the
// caller owns): the predicted side index never lowers what events say.
func mergeMax(a, b indexer.Overlaps, scratch *indexer.Overlaps) indexer.Overlaps {
	if len(b) == 0 {
		return a
	}
	if mergeInPlace(a, b) {
		return a
	}
	m := (*scratch)[:0]
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].Worker.Less(b[j].Worker)):
			m = append(m, a[i])
			i++
		case i == len(a) || b[j].Worker.Less(a[i].Worker):
			m = append(m, b[j])
			j++
		default:
			m = append(m, indexer.Overlap{Worker: a[i].Worker, Blocks: max(a[i].Blocks, b[j].Blocks)})
			i++
			j++
		}
	}
	*scratch = m
	return append(a[:0], m...)
}

// mergeInPlace is mergeMax when every worker of b is in a (the predicted
// side index mostly names workers whose events are in already): it raises
// a's overlaps in place, without building the merge and copying it back,
// and reports true; else it reports false, having raised the overlaps of
// b's workers before the first one missing from a, which mergeMax's
// merge then raises to the same values (max is idempotent), so one pass
// does both the test and the raise.
func mergeInPlace(a, b indexer.Overlaps) bool {
	i := 0
	for _, o := range b {
		for i < len(a) && a[i].Worker.Less(o.Worker) {
			i++
		}
		if i == len(a) || a[i].Worker != o.Worker {
			return false
		}
		a[i].Blocks = max(a[i].Blocks, o.Blocks)
		i++
	}
	return true
}

// utilization updates and returns the running estimate of the fleet's
// prefill utilization: the fraction of ranks with a request in prefill
// (busy of the n candidates, which candidates counts), sampled at every
// decision and averaged exponentially over Config.UtilizationWindow of
// time (arrivals sample the time average). a is rankUtilStep(now), taken
// before r.utilAt moves: the sample's weight whenever time passed.
func (r *Router) utilization(n, busy int, a float64, now time.Time) float64 {
	if n == 0 || r.cfg.UtilizationWindow <= 0 {
		return 0
	}
	u := float64(busy) / float64(n)
	if r.utilAt.IsZero() {
		// Start from an idle fleet rather than the first sample, so that
		// replicas whose first decisions come at different moments agree.
		r.utilAt = now
		return r.util
	}
	if dt := now.Sub(r.utilAt); dt > 0 {
		r.util += a * (u - r.util)
		r.utilAt = now
	}
	return r.util
}

// transferBlocks is what the decode hop's worker receives by KV transfer:
// the full prompt blocks it does not hold itself (0 on other hops).
func transferBlocks(h Hop, blocks, held int) int {
	if h != HopDecode {
		return 0
	}
	return max(0, blocks-held)
}

// rankUtilStep is the weight of a sample taken at now in the ranks'
// running utilization (rankUtil): the fleet estimate's window and clock
// (utilization runs after candidates, so r.utilAt is the last decision's
// time); 0 when no time passed or there is no estimate.
func (r *Router) rankUtilStep(now time.Time) float64 {
	if r.utilAt.IsZero() || r.cfg.UtilizationWindow <= 0 {
		return 0
	}
	dt := now.Sub(r.utilAt)
	if dt <= 0 {
		return 0
	}
	return 1 - math.Exp(-float64(dt)/float64(r.cfg.UtilizationWindow))
}

// rankUtil returns slot s's running prefill utilization in utilW (one
// per loads slot: Router.utilW) before this decision's sample, and folds
// the sample (busy: a request in prefill) in with weight a
// (rankUtilStep).
func rankUtil(utilW []float64, s int32, busy bool, a float64) float64 {
	u := utilW[s]
	if a > 0 {
		x := 0.0
		if busy {
			x = 1
		}
		utilW[s] += a * (x - u)
	}
	return u
}
