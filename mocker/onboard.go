package mocker

import (
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Onboarding (DESIGN.md §7). A request whose cached prefix continues in a
// lower tier is admitted like any other, but its next blocks are located in
// the fastest lower tier holding each, pinned there against eviction, and
// staged into freshly allocated G1 blocks over each tier's up link (the
// transfers of one link serialize). Until the last block lands the request
// is "loading": it holds its blocks and a running slot but is skipped by
// the scheduler, while every other request keeps running (vLLM's KV
// connector loads asynchronously the same way, the request waiting for
// remote KV). Admission needs free G1 blocks for the whole staged prefix
// at once, where a cold prompt needs its first chunk only; until they
// free, the request waits at the head of the queue and holds back the
// requests behind it (vLLM's scheduler stops admitting when it cannot
// allocate a request's slots, external tokens included). When the blocks
// land they are cached in G1 (Stored on the device tier), the pins drop,
// and the request computes only the rest of its prompt: the transfer
// time is part of its time to first token, the skipped prefill is not.
// If nothing else can run, the pass starts when the earliest onboarding
// lands.

// lowestHolder is the index of the fastest level holding h, -1 if none.
func (e *Engine) lowestHolder(h uint64) int {
	for i, lv := range e.levels {
		if lv.st.has(h) {
			return i
		}
	}
	return -1
}

// startLoad pins s.onboard's blocks and books their transfers.
func (e *Engine) startLoad(s *seq) {
	var per [kvevents.NumTiers]int
	remote := 0
	for _, o := range s.onboard {
		if o.li == remoteLevel {
			remote++
			continue
		}
		e.levels[o.li].st.pin(o.hash)
		per[o.li]++
	}
	end := e.startPull(remote)
	if remote > 0 {
		s.res.TransferTime = end - e.passStart
	}
	for li, n := range per {
		if n == 0 {
			continue
		}
		lv := e.levels[li]
		start := max(e.passStart, lv.upFree)
		lv.upFree = start + e.scale(lv.up.Transfer(n, e.blockBytes))
		end = max(end, lv.upFree)
	}
	s.loading, s.loadEnd = true, end
	e.stats.OnboardedBlocks += uint64(len(s.onboard) - remote)
}

// unpinLoad drops s's pins (load landed, or s was preempted or cancelled
// while loading).
func (e *Engine) unpinLoad(s *seq) {
	for _, o := range s.onboard {
		if o.li != remoteLevel {
			e.levels[o.li].st.unpin(o.hash)
		}
	}
	s.onboard = s.onboard[:0]
	s.loading = false
}

// finishLoads completes every onboarding that landed by now: the staged
// blocks are cached in G1 and the request becomes schedulable.
func (e *Engine) finishLoads(now time.Duration) {
	for _, s := range e.running {
		if !s.loading || s.loadEnd > now {
			continue
		}
		full := s.registered + len(s.onboard)
		if n := len(s.onboard); n > 0 && s.onboard[n-1].li == remoteLevel {
			// Remote blocks come last: the pull landed (once: a request
			// preempted later recomputes).
			e.pulled = append(e.pulled, s.req.ID)
			s.req.RemoteBlocks = 0
		}
		e.unpinLoad(s)
		s.numComputed = full * e.cfg.BlockSize
		e.register(s, s.numComputed)
	}
}

// nextLoad is the earliest landing of a running onboarding.
func (e *Engine) nextLoad() (time.Duration, bool) {
	t, ok := time.Duration(0), false
	for _, s := range e.running {
		if s.loading && (!ok || s.loadEnd < t) {
			t, ok = s.loadEnd, true
		}
	}
	return t, ok
}

// evicted announces a G1 eviction and, in write-back mode, offers the
// block to the pipeline.
func (e *Engine) evicted(bl block) {
	e.emitRemoved(bl.hash)
	if len(e.levels) > 0 && !e.tiers.WriteThrough {
		e.enqueue(0, blockTier(&bl), bl.uses, e.passStart, e.passStart, true, nil)
	}
}

// blockTier is a cached G1 block's identity in the prefix chain.
func blockTier(bl *block) tierBlock {
	return tierBlock{hash: bl.hash, local: bl.local, parent: bl.parent, pos: bl.pos, hasParent: bl.pos > 0}
}

// TierBlocks returns the engine hashes tier t holds (G1: cached blocks;
// G4: the shared store's), unordered; nil for a tier the engine lacks.
func (e *Engine) TierBlocks(t kvevents.Tier) []uint64 {
	if t == kvevents.TierDevice {
		out := make([]uint64, 0, len(e.pool.byHash))
		for h := range e.pool.byHash {
			out = append(out, h)
		}
		return out
	}
	for _, lv := range e.levels {
		if lv.st.tier == t {
			out := make([]uint64, 0, len(lv.st.byHash))
			for h := range lv.st.byHash {
				out = append(out, h)
			}
			return out
		}
	}
	return nil
}
