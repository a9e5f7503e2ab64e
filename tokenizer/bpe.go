package tokenizer

import (
	"container/heap"
	"math"
)

// fastCore is the tiktoken BPE algorithm behind a hand-written
// pre-tokenizer ([splitterFor]): for each piece, the whole piece if it is a
// token, else repeatedly merge the adjacent pair whose concatenation has the
// lowest rank (leftmost on ties). Ranks are token ids. It produces the same
// ids as the tiktoken-go core on the same ranks and pattern
// (TestFastCoreDifferential), without the backtracking regex.
type fastCore struct {
	ranks *tokenTable // raw token bytes -> id
	bytes [][]byte    // id -> raw bytes (vocab only)
	// byteID is the id of each single byte (0 if it is no token, as a
	// failed lookup gave before); pair2 the id of each two-byte token by
	// its bytes (math.MaxUint32: none). Dense, so the merge loop's
	// commonest lookups hit lines already in cache.
	byteID [256]uint32
	pair2  []uint32
	split  splitter
	// words memoizes the ids of pieces that are not tokens themselves (nil:
	// off), as for SentencePiece-style models: real text repeats them, and a
	// hit replaces the merge loop's lookups of every pair.
	words *wordCache
}

func newFastCore(ranks map[string]int, split splitter) *fastCore {
	maxID := 0
	for _, id := range ranks {
		maxID = max(maxID, id)
	}
	c := &fastCore{ranks: newTokenTable(ranks), bytes: make([][]byte, maxID+1), split: split, words: &wordCache{}}
	c.pair2 = make([]uint32, 1<<16)
	for i := range c.pair2 {
		c.pair2[i] = math.MaxUint32
	}
	for s, id := range ranks {
		c.bytes[id] = []byte(s)
		switch len(s) {
		case 1:
			c.byteID[s[0]] = uint32(id)
		case 2:
			c.pair2[uint16(s[0])<<8|uint16(s[1])] = uint32(id)
		}
	}
	return c
}

func (c *fastCore) appendOrdinary(dst []uint32, text string) []uint32 {
	return c.appendOrdinaryStop(dst, text, nil)
}

// stopEvery is how many pieces (or heap merges) pass between two calls of
// the stop check: a check is a context's Err (a lock), a piece tens of ns.
const stopEvery = 1024

// appendOrdinaryStop is appendOrdinary, giving up (with a partial result)
// once stop (nil: never) reports true, so that a huge prompt stops costing
// CPU when its client is gone.
func (c *fastCore) appendOrdinaryStop(dst []uint32, text string, stop func() bool) []uint32 {
	return c.appendMarked(dst, text, stop, nil, 0)
}

// appendMarked is appendOrdinaryStop that, with marks not nil (and text
// valid UTF-8), also appends to *marks the points where encoding can resume
// (prompts.go): after pieces ending at a markable byte, at least
// markEvery bytes apart, at offset base+end with the ids' length there.
func (c *fastCore) appendMarked(dst []uint32, text string, stop func() bool, marks *[]pieceMark, base int) []uint32 {
	text = validUTF8(text)
	var parts []part
	last := 0
	for i, n := 0, 0; i < len(text); n++ {
		if stop != nil && n%stopEvery == stopEvery-1 && stop() {
			return dst
		}
		j := c.split(text, i)
		piece := text[i:j]
		i = j
		if id, ok := c.ranks.get(piece); ok {
			dst = append(dst, id)
		} else if len(piece) >= longPiece {
			dst = c.mergeHeap(dst, piece, stop)
		} else if c.words == nil || len(piece) > maxCachedWord {
			dst, parts = c.mergeScan(dst, piece, parts)
		} else if ids, ok := c.words.get(piece); ok {
			dst = append(dst, ids...)
		} else {
			at := len(dst)
			dst, parts = c.mergeScan(dst, piece, parts)
			c.words.put(piece, dst[at:])
		}
		if marks != nil && j-last >= markEvery && markable(text, j) {
			*marks = append(*marks, pieceMark{off: base + j, n: len(dst)})
			last = j
		}
	}
	return dst
}

// part is a token of the piece being merged: its byte offset, its id and
// the rank of the pair starting there (math.MaxUint32: none).
type part struct {
	off      int32
	id, rank uint32
}

// longPiece is the piece length (bytes) from which encoding switches from the
// quadratic scan (fastest for words) to the heap (n log n), so that a long
// run of letters or spaces cannot make a prompt cost seconds.
const longPiece = 128

// mergeScan is tiktoken's reference byte_pair_merge: quadratic in the
// piece length. A part's id is its last merge's rank (ranks are ids), and
// byte pairs are ranked from a dense table, so only merged pairs of three
// or more bytes go to the hash table.
func (c *fastCore) mergeScan(dst []uint32, piece string, scratch []part) ([]uint32, []part) {
	parts := scratch[:0]
	for i := 0; i < len(piece); i++ {
		r := uint32(math.MaxUint32)
		if i+1 < len(piece) {
			r = c.pair2[uint16(piece[i])<<8|uint16(piece[i+1])]
		}
		parts = append(parts, part{off: int32(i), id: c.byteID[piece[i]], rank: r})
	}
	parts = append(parts, part{off: int32(len(piece)), rank: math.MaxUint32})
	rank := func(i int) uint32 { // of parts i and i+1 merged with part i+2
		if i+3 < len(parts) {
			if r, ok := c.ranks.get(piece[parts[i].off:parts[i+3].off]); ok {
				return r
			}
		}
		return math.MaxUint32
	}
	for len(parts) > 1 {
		best, bi := uint32(math.MaxUint32), -1
		for i := 0; i+1 < len(parts); i++ {
			if parts[i].rank < best {
				best, bi = parts[i].rank, i
			}
		}
		if bi < 0 {
			break
		}
		parts[bi].id = best
		parts[bi].rank = rank(bi)
		if bi > 0 {
			parts[bi-1].rank = rank(bi - 1)
		}
		parts = append(parts[:bi+1], parts[bi+2:]...)
	}
	for i := 0; i+1 < len(parts); i++ {
		dst = append(dst, parts[i].id)
	}
	return dst, parts
}

// mergeHeap is the same merge order as mergeScan (lowest rank first,
// leftmost among equal ranks) with the candidate pairs in a heap and the
// parts in a linked list: O(n log n). A heap entry is stale once either of
// its parts changed; it is then skipped.
func (c *fastCore) mergeHeap(dst []uint32, piece string, stop func() bool) []uint32 {
	n := len(piece)
	next := make([]int32, n) // start of the next part, n at the end
	prev := make([]int32, n) // start of the previous part, -1 at the start
	gen := make([]uint32, n) // bumped when the part starting there changes
	for i := range n {
		next[i], prev[i] = int32(i+1), int32(i-1)
	}
	h := make(pairHeap, 0, n)
	push := func(i int32) {
		j := next[i]
		if int(j) >= n {
			return
		}
		end := next[j]
		if r, ok := c.ranks.get(piece[i:end]); ok {
			h = append(h, pair{rank: r, at: i, gen: gen[i], genR: gen[j]})
		}
	}
	for i := range int32(n - 1) {
		push(i)
	}
	heap.Init(&h)
	for pops := 0; h.Len() > 0; pops++ {
		if stop != nil && pops%stopEvery == stopEvery-1 && stop() {
			return dst
		}
		p := heap.Pop(&h).(pair)
		j := next[p.at]
		if gen[p.at] != p.gen || int(j) >= n || gen[j] != p.genR {
			continue // a part of this pair merged since
		}
		// Merge the part at j into the part at p.at.
		next[p.at] = next[j]
		if int(next[j]) < n {
			prev[next[j]] = p.at
		}
		gen[p.at]++
		gen[j]++
		before := h.Len()
		push(p.at)
		if q := prev[p.at]; q >= 0 {
			push(q) // (q, p.at) is stale by p.at's generation; re-pair
		}
		for k := before; k < h.Len(); k++ {
			heap.Fix(&h, k)
		}
	}
	for i := 0; i < n; i = int(next[i]) {
		id, _ := c.ranks.get(piece[i:next[i]])
		dst = append(dst, id)
	}
	return dst
}

// pair is a merge candidate: the parts starting at at and at next[at],
// with the generations they had when it was pushed.
type pair struct {
	rank      uint32
	at        int32
	gen, genR uint32
}

// pairHeap orders candidates by rank, then position (leftmost first).
type pairHeap []pair

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].at < h[b].at
}
func (h pairHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pair)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (c *fastCore) tokenBytes(id uint32) ([]byte, bool) {
	if int(id) >= len(c.bytes) || c.bytes[id] == nil {
		return nil, false
	}
	return c.bytes[id], true
}
