package loads

// The block index's nodes: one per active (or recently active) block,
// listing the worker slots holding it (Tracker.index maps a block's
// sequence hash to its node).

import "unsafe"

// holder is one worker slot holding a block, with the number of its active
// requests that hold it.
type holder struct{ slot, refs int32 }

// node is one block (sequence hash) and the slots holding it. A node whose
// holders are all gone stays in the index ("dead") until the next collection,
// so a prefix that is routed again soon costs a lookup, not an insert.
type node struct {
	hash   uint64
	first  holder   // a live holder, or refs 0 when the node has none
	rest   []holder // the other live holders, unordered
	listed bool     // in Tracker.deadList
	free   bool     // out of the index, in Tracker.freeNodes
	// seen is the serial of the last Add that booked it (bookHeld),
	// in the padding after the flags.
	seen uint32
}

// count is the number of live holders.
func (nd *node) count() int {
	if nd.first.refs == 0 {
		return 0
	}
	return 1 + len(nd.rest)
}

// find returns slot s's holder, or nil.
func (nd *node) find(s int32) *holder {
	if nd.first.refs > 0 && nd.first.slot == s {
		return &nd.first
	}
	for j := range nd.rest {
		if nd.rest[j].slot == s {
			return &nd.rest[j]
		}
	}
	return nil
}

// add makes s a holder with one reference (s must not be one).
func (nd *node) add(s int32) {
	if nd.first.refs == 0 {
		nd.first = holder{slot: s, refs: 1}
		return
	}
	nd.rest = append(nd.rest, holder{slot: s, refs: 1})
}

// drop removes holder h (from find) whose refs reached 0.
func (nd *node) drop(h *holder) {
	last := len(nd.rest) - 1
	if last < 0 {
		nd.first = holder{}
		return
	}
	*h = nd.rest[last]
	nd.rest = nd.rest[:last]
}

// sharedPrefix is the length of the longest common prefix of a and b
// (Add runs it over whole prompts): equalRun compares whole runs of
// blocks with the runtime's vectorized memory compare, and the run where
// they part is searched four blocks at a time.
func sharedPrefix(a, b []uint64) int {
	m := min(len(a), len(b))
	a, b = a[:m], b[:m]
	k := 0
	for ; k+prefixRun <= m; k += prefixRun {
		if !equalRun(a[k:k+prefixRun], b[k:k+prefixRun]) {
			break
		}
	}
	for ; k+4 <= m; k += 4 {
		x, y := a[k:k+4:k+4], b[k:k+4:k+4]
		if (x[0]^y[0])|(x[1]^y[1])|(x[2]^y[2])|(x[3]^y[3]) != 0 {
			break
		}
	}
	for k < m && a[k] == b[k] {
		k++
	}
	return k
}

// prefixRun is how many blocks sharedPrefix compares at once (512 bytes:
// a few vector compares, where a block at a time took ~5 instructions).
const prefixRun = 64

// equalRun reports whether a and b (of the same length) hold the same
// blocks, as one memory compare (runtime.memequal through string
// equality).
func equalRun(a, b []uint64) bool {
	n := len(a) * 8
	return unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(a))), n) ==
		unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// bookUnheld books slot s on the leading nodes of rn that have no live
// holder (dead nodes or new ones: the common case of a prompt new to every
// worker) and returns how many it booked. A leaf loop whose values stay in
// registers: with bookHeld's calls in the same loop the index and counts
// went through the stack, each block waiting for the previous one's
// store.
func bookUnheld(nodes []node, rn []int32, s int32, ser uint32) int {
	for i, ni := range rn {
		nd := &nodes[ni]
		if nd.first.refs != 0 {
			return i
		}
		nd.first = holder{slot: s, refs: 1}
		nd.seen = ser
	}
	return len(rn)
}

// bookHeld books slot s on the nodes rn and returns how many gained s as a
// new holder beside a live one (held) and how many had no live holder
// (unheld). ser is this Add's serial (Tracker.books), which bookUnheld
// left on the nodes it booked.
//
// s's active set is prefix-closed, so the blocks of rn it held before
// this Add are a prefix of rn: once a node lacks s, so do all later ones
// that this Add has not booked yet, and their holders need not be
// searched (a prefix that many workers hold made that search most of an
// Add). A node booked earlier in this Add (a chain naming one node
// twice) is searched as before: its seen is ser. A stale seen equal to
// ser (the serial wrapped) only costs that search.
func bookHeld(nodes []node, rn []int32, s int32, ser uint32) (held, unheld int) {
	i := 0
	for ; i < len(rn); i++ {
		nd := &nodes[rn[i]]
		if nd.first.refs == 0 {
			nd.first = holder{slot: s, refs: 1}
			unheld++
		} else if hd := nd.find(s); hd != nil {
			hd.refs++
		} else {
			break
		}
		nd.seen = ser
	}
	for ; i < len(rn); i++ {
		nd := &nodes[rn[i]]
		if nd.first.refs == 0 {
			nd.first = holder{slot: s, refs: 1}
			unheld++
		} else if nd.seen != ser {
			nd.add(s)
			held++
		} else if hd := nd.find(s); hd != nil {
			hd.refs++
		} else {
			nd.add(s)
			held++
		}
		nd.seen = ser
	}
	return held, unheld
}

func (t *Tracker) newNode(h uint64) int32 {
	if n := len(t.freeNodes); n > 0 {
		ni := t.freeNodes[n-1]
		t.freeNodes = t.freeNodes[:n-1]
		t.nodes[ni].hash, t.nodes[ni].free = h, false
		return ni
	}
	t.nodes = append(t.nodes, node{hash: h})
	return int32(len(t.nodes) - 1)
}

// nodeOf returns the node of block h and whether it was indexed already
// (else it is new). Add's slow path, kept out of its loop.
//
//go:noinline
func (t *Tracker) nodeOf(h uint64) (int32, bool) {
	if ni, ok := t.index.get(h); ok {
		return ni, true
	}
	ni := t.newNode(h)
	t.index.put(h, ni)
	return ni, false
}

// minDead is the number of dead nodes below which collect never runs.
const minDead = 1024

// collect drops dead nodes from the index once they outnumber the live ones
// (amortized O(1) per released block). A collection visits the dead list
// a few items per released block (budget, from each release), not all at
// once: all at once it was the tail of Free under the router's lock (some
// 10k dead nodes, ~1 ms, at 32 prompts in flight). Dead nodes hold no
// load, so when they leave the index changes no answer.
func (t *Tracker) collect(budget int) {
	if t.swept == 0 && (t.dead < minDead || 2*t.dead < t.index.len()) {
		return
	}
	end := min(len(t.deadList), t.swept+max(budget, collectMin))
	freed := false
	for _, ni := range t.deadList[t.swept:end] {
		nd := &t.nodes[ni]
		nd.listed = false
		if nd.first.refs == 0 { // not revived since it died
			t.index.del(nd.hash)
			nd.free = true
			t.freeNodes = append(t.freeNodes, ni)
			t.dead--
			freed = true
		}
	}
	t.swept = end
	if end == len(t.deadList) {
		t.deadList, t.swept = t.deadList[:0], 0
	}
	if freed {
		// Freed nodes may be reused for other blocks: Add's cache of
		// nodes by position no longer holds.
		t.last, t.lastHash = t.last[:0], t.lastHash[:0]
	}
}

// collectMin is the fewest dead-list items a collection step visits.
const collectMin = 256

// releaseBlocks drops one reference of slot s on each node of rn (a
// released request's) and returns how many nodes s stopped holding
// (dropped) and how many of those were left without a live holder
// (died), listing those in deadList.
//
// The common case is a leaf loop, as in Add: the nodes where s is the
// only holder with one reference (they die) form a suffix of rn, because
// every active set is prefix-closed (the holders of block i+1, and the
// references of s on it, are never more than block i's), so
// releaseSole takes them from the end without calls or stores outside
// the nodes. The rest (a prefix other requests or workers share) goes
// through the general loop first, then the dead suffix is listed, so
// deadList gets the same items in the same order as a per-block loop
// over rn: the suffix's nodes occur once in rn (a node occurring twice
// has two references of s) and none in the prefix.
func (t *Tracker) releaseBlocks(rn []int32, s int32) (dropped, died int) {
	k, listed := releaseSole(t.nodes, rn, s)
	dropped, died = t.releaseShared(rn[:k], s)
	if !listed {
		for _, ni := range rn[k:] {
			if nd := &t.nodes[ni]; !nd.listed {
				nd.listed = true
				t.deadList = append(t.deadList, ni)
			}
		}
	}
	n := len(rn) - k
	return dropped + n, died + n
}

// releaseSole drops slot s from the trailing nodes of rn that s alone
// holds, with one reference, and returns where that suffix starts and
// whether all its nodes were already in the dead list.
func releaseSole(nodes []node, rn []int32, s int32) (k int, listed bool) {
	listed = true
	k = len(rn)
	for k > 0 {
		nd := &nodes[rn[k-1]]
		if nd.first != (holder{slot: s, refs: 1}) || len(nd.rest) != 0 {
			break
		}
		nd.first = holder{}
		listed = listed && nd.listed
		k--
	}
	return k, listed
}

// releaseShared is releaseBlocks' general loop, one block at a time.
func (t *Tracker) releaseShared(rn []int32, s int32) (dropped, died int) {
	for _, ni := range rn {
		nd := &t.nodes[ni]
		hd := nd.find(s)
		if hd.refs--; hd.refs > 0 {
			continue
		}
		nd.drop(hd)
		dropped++
		if nd.first.refs == 0 {
			died++
			if !nd.listed {
				nd.listed = true
				t.deadList = append(t.deadList, ni)
			}
		}
	}
	return dropped, died
}
