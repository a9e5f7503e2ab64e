package loads

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Bookings by origin (DESIGN.md §9): a router replica tracks its own
// requests (Entry.Origin "") and, through load sync, the other replicas'
// (Entry.Origin = their id). Both count in Load alike, so costs see the
// whole tier's load; the origin only serves RemoveOrigin (a replica that
// went silent) and Breakdown (the debug view).

// OriginLoad is the part of a worker's load booked by one replica.
type OriginLoad struct {
	// Origin is the replica id; "" is this replica.
	Origin string
	Load   Load
}

// WorkerLoad is one worker+rank's load with its local and remote parts.
//
// NB: a part's DecodeBlocks counts the distinct blocks of that part's
// requests, so when requests of several origins share prompt blocks on the
// worker, the parts' DecodeBlocks add up to more than Total's (a shared
// block counts once in Total, once in every part holding it). The other
// fields add up exactly.
type WorkerLoad struct {
	Worker kvevents.Worker
	// Total is Load(Worker): what the costs use.
	Total Load
	// Local is the part routed by this replica.
	Local Load
	// Remote are the other replicas' parts, sorted by origin.
	Remote []OriginLoad
}

// String formats w on one line: "w1: prefill=... local: ... remote b: ...".
func (w WorkerLoad) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "w%s: %s | local %s", w.Worker, w.Total, w.Local)
	for _, r := range w.Remote {
		fmt.Fprintf(&b, " | %s %s", r.Origin, r.Load)
	}
	return b.String()
}

// Breakdown returns the load of every worker+rank with active requests,
// sorted by worker, split by origin. It walks every active request and
// its blocks: a debug view, not for the routing path.
func (t *Tracker) Breakdown() []WorkerLoad {
	type key struct {
		slot   int32
		origin string
	}
	parts := make(map[key]*Load)
	blocks := make(map[key]map[uint64]struct{})
	for _, r := range t.reqs {
		k := key{r.slot, r.e.Origin}
		l := parts[k]
		if l == nil {
			l = new(Load)
			parts[k] = l
			blocks[k] = make(map[uint64]struct{})
		}
		l.Requests++
		l.DecodeBlocks += r.e.OutputBlocks
		if r.inPrefill {
			l.PrefillRequests++
			l.PrefillTokens += r.e.PrefillTokens
		}
		for _, h := range r.e.Blocks {
			blocks[k][h] = struct{}{}
		}
	}
	bySlot := make(map[int32]*WorkerLoad)
	for k, l := range parts {
		l.DecodeBlocks += len(blocks[k])
		wl := bySlot[k.slot]
		if wl == nil {
			wl = &WorkerLoad{Worker: t.slots[k.slot].w, Total: t.slots[k.slot].load}
			bySlot[k.slot] = wl
		}
		if k.origin == "" {
			wl.Local = *l
		} else {
			wl.Remote = append(wl.Remote, OriginLoad{Origin: k.origin, Load: *l})
		}
	}
	out := make([]WorkerLoad, 0, len(bySlot))
	for _, wl := range bySlot {
		slices.SortFunc(wl.Remote, func(a, b OriginLoad) int { return cmp.Compare(a.Origin, b.Origin) })
		out = append(out, *wl)
	}
	slices.SortFunc(out, func(a, b WorkerLoad) int { return a.Worker.Compare(b.Worker) })
	return out
}

// RemoveOrigin releases every request booked by origin (a replica whose
// heartbeats stopped) and returns their ids, sorted. The local origin ""
// is never removed this way.
func (t *Tracker) RemoveOrigin(origin string) []string {
	if origin == "" {
		return nil
	}
	var ids []string
	for id, r := range t.reqs {
		if r.e.Origin == origin {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		t.release(t.reqs[id])
		t.stats.Freed++
	}
	return ids
}
