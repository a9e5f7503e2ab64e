package indexer

import (
	"sync"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// FindMatches implements Index: the joint match (see Groups).
func (g *Groups) FindMatches(locals []uint64) Overlaps { return g.AppendMatchesIDs(nil, locals, nil) }

// AppendMatches implements MatchAppender.
func (g *Groups) AppendMatches(dst Overlaps, locals []uint64) Overlaps {
	return g.AppendMatchesIDs(dst, locals, nil)
}

// AppendMatchesIDs implements IDMatchAppender: the inner index's matches,
// each hybrid worker's clipped to its joint match. ids of another length
// than locals are ignored (computed here when a hybrid worker matched).
func (g *Groups) AppendMatchesIDs(dst Overlaps, locals, ids []uint64) Overlaps {
	base := len(dst)
	dst = g.innerMatches(dst, locals, ids)
	if g.hybrid.Load() == 0 || g.cfg.FullOnly {
		return dst
	}
	return g.clip(dst, base, locals, ids)
}

// WantsIDs implements IDMatchAppender: hybrid workers' groups read ids
// too, but only the inner index's wish makes the caller compute them.
func (g *Groups) WantsIDs() bool {
	a, ok := g.inner.(IDMatchAppender)
	return ok && a.WantsIDs()
}

func (g *Groups) innerMatches(dst Overlaps, locals, ids []uint64) Overlaps {
	if a, ok := g.inner.(IDMatchAppender); ok && len(ids) == len(locals) {
		return a.AppendMatchesIDs(dst, locals, ids)
	}
	return AppendMatches(g.inner, dst, locals)
}

// idsPool holds prefix-id scratch of lookups whose caller passed none.
var idsPool = sync.Pool{New: func() any { return new([]uint64) }}

// clip replaces each hybrid worker's overlap in dst[base:] by its joint
// match and drops the workers left at 0.
func (g *Groups) clip(dst Overlaps, base int, locals, ids []uint64) Overlaps {
	var pooled *[]uint64
	g.mu.RLock()
	out := base
	for _, o := range dst[base:] {
		if hw := g.workers[o.Worker]; hw != nil {
			if len(ids) != len(locals) {
				pooled = idsPool.Get().(*[]uint64)
				ids = kvhash.AppendPrefixIDs((*pooled)[:0], locals)
				*pooled = ids
			}
			o.Blocks = hw.joint(o.Blocks, ids, g.cfg.BlockSize)
		}
		if o.Blocks > 0 {
			dst[out] = o
			out++
		}
	}
	g.mu.RUnlock()
	if pooled != nil {
		idsPool.Put(pooled)
	}
	return dst[:out]
}

// joint is the largest L <= full that every group allows (see Groups):
// each group lowers L to its own deepest L' <= L until none does, which
// is the largest L all allow since each group's figure is monotone in L.
func (hw *hybridWorker) joint(full int, ids []uint64, bs int) int {
	l := full
	for changed := true; changed && l > 0; {
		changed = false
		for _, s := range hw.groups {
			if x := s.own(l, ids, bs); x < l {
				l, changed = x, true
			}
		}
	}
	return l
}

// own returns the deepest L' <= l the group allows alone, ids the query's
// prefix ids (at least l).
func (s *groupState) own(l int, ids []uint64, bs int) int {
	if s.g.Kind == kvevents.GroupState {
		for q := l - 1; q >= 0; q-- {
			if s.held.slot(ids[q]) >= 0 {
				return q + 1
			}
		}
		return 0
	}
	need := -1 // every block below L: no window known
	if s.g.Window != 0 {
		need = (int(s.g.Window) - 1 + bs - 1) / bs
	}
	for l > 0 {
		lo := 0
		if need >= 0 {
			lo = max(0, l-need)
		}
		q := l - 1
		for q >= lo && s.held.slot(ids[q]) >= 0 {
			q--
		}
		if q < lo {
			return l
		}
		l = q // every L' in (q, q+need] needs block q
	}
	return 0
}

// GroupMatch is one group's own figure in a JointMatch.
type GroupMatch struct {
	Group kvevents.Group
	// Blocks is the deepest L <= JointMatch.Full the group allows alone.
	Blocks int
}

// JointMatch explains a hybrid worker's match (Explain).
type JointMatch struct {
	Full   int          // the full-attention group's overlap F
	Blocks int          // the joint match (what a lookup credits unless FullOnly)
	Groups []GroupMatch // the worker's non-full groups, by index
	// Limit indexes Groups: the group whose own figure is smallest (ties:
	// lowest group index); -1 when Blocks == Full (full attention limits
	// the match, as without groups).
	Limit int
}

// Explain returns worker+rank w's joint match of locals and each group's
// own figure; ok is false when w is not hybrid (its match is the inner
// index's). It runs its own inner lookup: for explaining, not routing.
func (g *Groups) Explain(w kvevents.Worker, locals []uint64) (m JointMatch, ok bool) {
	m, ok = g.ExplainEach(locals, []kvevents.Worker{w})[w]
	return m, ok
}

// ExplainEach is Explain for each hybrid worker+rank among ws, with one
// inner lookup and one prefix-id chain for all of them; nil when none of
// ws is hybrid.
func (g *Groups) ExplainEach(locals []uint64, ws []kvevents.Worker) map[kvevents.Worker]JointMatch {
	if g.hybrid.Load() == 0 {
		return nil
	}
	full := AppendMatches(g.inner, nil, locals)
	ids := kvhash.AppendPrefixIDs(nil, locals)
	var out map[kvevents.Worker]JointMatch
	g.mu.RLock()
	defer g.mu.RUnlock()
	for _, w := range ws {
		hw := g.workers[w]
		if hw == nil {
			continue
		}
		if out == nil {
			out = make(map[kvevents.Worker]JointMatch)
		}
		f := full.Get(w)
		m := JointMatch{Full: f, Blocks: hw.joint(f, ids, g.cfg.BlockSize), Limit: -1}
		for i, s := range hw.groups {
			x := s.own(f, ids, g.cfg.BlockSize)
			m.Groups = append(m.Groups, GroupMatch{Group: s.g, Blocks: x})
			if m.Blocks < f && (m.Limit < 0 || x < m.Groups[m.Limit].Blocks) {
				m.Limit = i
			}
		}
		out[w] = m
	}
	return out
}
