package router

import (
	"slices"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// groupsOf returns the KV cache group overlay of ix (directly, or under
// a shell's indexer.Concurrent), nil when it has none.
func groupsOf(ix indexer.Index) *indexer.Groups {
	if c, ok := ix.(*indexer.Concurrent); ok {
		ix = c.Index()
	}
	g, _ := ix.(*indexer.Groups)
	return g
}

// Groups returns the device tier's KV cache group overlay (DESIGN.md
// §13), nil outside PolicyKV or when Options.NewIndex built none.
func (r *Router) Groups() *indexer.Groups { return r.groups }

// jointGroups returns the device overlay when some worker's lookups
// credit its joint match (indexer.Groups.Joint), else nil: then the
// predicted and active credits, which know full attention alone, must
// not raise that worker's overlap (DESIGN.md §13).
func (r *Router) jointGroups() *indexer.Groups {
	if g := r.groups; g != nil && g.AnyJoint() {
		return g
	}
	return nil
}

// dropJoint removes from o the workers whose lookups credit the joint
// match (g.Joint), in place.
func dropJoint(o indexer.Overlaps, g *indexer.Groups) indexer.Overlaps {
	return slices.DeleteFunc(o, func(x indexer.Overlap) bool { return g.Joint(x.Worker) })
}

// GroupMatches explains req's device-tier match on each hybrid
// worker+rank among ws (DESIGN.md §13): full attention's overlap, the
// joint match the cost credited and each group's own figure. Workers
// without groups are absent; the result is nil when none of ws is hybrid.
// It hashes the prompt and looks it up again, once for all of ws: for
// explaining a decision (the /route breakdown), not on the routing path.
func (r *Router) GroupMatches(req *Request, ws []kvevents.Worker) map[kvevents.Worker]indexer.JointMatch {
	g := r.Groups()
	if g == nil || !g.HasHybrid() {
		return nil
	}
	locals := req.Locals
	if req.Tokens != nil {
		locals = kvhash.AppendLocal(nil, req.Tokens, r.cfg.BlockSize, kvhash.Seed(req.LoRA, req.Namespace))
		if req.CacheSalt != "" {
			locals = kvhash.SaltLocals(locals, req.CacheSalt)
		}
	}
	return g.ExplainEach(locals, ws)
}
