package tokenizer

import "math"

// fastCore is the tiktoken BPE algorithm behind a hand-written
// pre-tokenizer ([splitterFor]): for each piece, the whole piece if it is a
// token, else repeatedly merge the adjacent pair whose concatenation has the
// lowest rank (leftmost on ties). Ranks are token ids. It produces the same
// ids as the tiktoken-go core on the same ranks and pattern
// (TestFastCoreDifferential), without the backtracking regex.
type fastCore struct {
	ranks map[string]uint32 // raw token bytes -> id
	bytes [][]byte          // id -> raw bytes (vocab only)
	split splitter
}

func newFastCore(ranks map[string]int, split splitter) *fastCore {
	maxID := 0
	for _, id := range ranks {
		maxID = max(maxID, id)
	}
	c := &fastCore{ranks: make(map[string]uint32, len(ranks)), bytes: make([][]byte, maxID+1), split: split}
	for s, id := range ranks {
		c.ranks[s] = uint32(id)
		c.bytes[id] = []byte(s)
	}
	return c
}

func (c *fastCore) appendOrdinary(dst []uint32, text string) []uint32 {
	text = validUTF8(text)
	var parts []part
	for i := 0; i < len(text); {
		j := c.split(text, i)
		piece := text[i:j]
		i = j
		if id, ok := c.ranks[piece]; ok {
			dst = append(dst, id)
			continue
		}
		dst, parts = c.merge(dst, piece, parts)
	}
	return dst
}

// part is a boundary of the piece being merged: its byte offset and the rank
// of the pair starting there (math.MaxUint32: none).
type part struct {
	off  int
	rank uint32
}

// merge appends the ids of a piece that is not itself a token. scratch is
// reused across pieces. NB: quadratic in the piece length, like tiktoken's
// reference byte_pair_merge; pieces are words, numbers and whitespace runs.
func (c *fastCore) merge(dst []uint32, piece string, scratch []part) ([]uint32, []part) {
	parts := scratch[:0]
	for i := 0; i <= len(piece); i++ {
		parts = append(parts, part{off: i, rank: math.MaxUint32})
	}
	rank := func(i, skip int) uint32 {
		if i+skip+2 < len(parts) {
			if r, ok := c.ranks[piece[parts[i].off:parts[i+skip+2].off]]; ok {
				return r
			}
		}
		return math.MaxUint32
	}
	for i := 0; i+2 < len(parts); i++ {
		parts[i].rank = rank(i, 0)
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
		parts[bi].rank = rank(bi, 1)
		if bi > 0 {
			parts[bi-1].rank = rank(bi-1, 1)
		}
		parts = append(parts[:bi+1], parts[bi+2:]...)
	}
	for i := 0; i+1 < len(parts); i++ {
		dst = append(dst, c.ranks[piece[parts[i].off:parts[i+1].off]])
	}
	return dst, parts
}

func (c *fastCore) tokenBytes(id uint32) ([]byte, bool) {
	if int(id) >= len(c.bytes) || c.bytes[id] == nil {
		return nil, false
	}
	return c.bytes[id], true
}
