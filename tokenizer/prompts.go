package tokenizer

import (
	"sync"
	"unicode/utf8"
)

// Incremental encoding of extended prompts. A multi-turn chat resends the
// previous turns: the new prompt's text starts with the previous one's.
// The prompt cache keeps the last prompts' ids with the points where
// encoding can resume exactly, and encodes only what follows the last such
// point inside the shared prefix.
//
// Resumable points (all conservative; a point is used only when every byte
// the encoder examined to get there lies inside the shared prefix, so the
// new text is encoded the same up to it):
//   - after an added token: the matcher looks at most the longest added
//     token plus one rune past the token's end (longest match, rstrip,
//     single_word), so a match whose next + maxAdded + UTFMax is within the
//     shared prefix is found again, with the same segment before it;
//   - inside a segment (fastCore without a normalizer only): after a piece
//     whose last byte is ASCII and not whitespace. Every scanner looks at
//     most one rune past its piece except the whitespace alternatives,
//     which read their whole run of whitespace; a run cannot reach past a
//     non-whitespace byte, so the pieces before such a point read at most
//     UTFMax bytes past it. Pieces are merged independently, so the ids
//     before the point are the same.

// promptCache is a bounded LRU of recent prompts (entries and bytes).
// Safe for concurrent use: entries are immutable once stored; the lock
// guards the list only, and prefixes are compared outside it.
type promptCache struct {
	maxEntries int
	maxBytes   int64
	minReuse   int

	mu      sync.Mutex
	recent  []*promptEntry // most recent first
	bytes   int64
	hits    uint64 // prompts that reused a cached prefix
	misses  uint64
	reused  uint64 // tokens taken from the cache instead of encoded
	encoded uint64 // tokens encoded by prompts that went through the cache
}

// promptEntry is one encoded prompt and its resumable points.
type promptEntry struct {
	text       string
	addSpecial bool
	ids        []uint32
	matches    []matchMark
	marks      []pieceMark
	cost       int64
}

// matchMark is an added token found in the text: the segment before it
// ends at segEnd, scanning resumed at next, after which the ids had length
// n; the matcher read no byte at or past extent.
type matchMark struct{ segEnd, next, extent, n int }

// pieceMark is a resumable point inside a segment: byte offset off in the
// text, ids length n there.
type pieceMark struct{ off, n int }

// markEvery is the least distance (bytes) between two piece marks: the
// marks cost 16 bytes per markEvery bytes of text, a resume re-encodes at
// most about markEvery bytes before the shared prefix's end.
const markEvery = 64

func newPromptCache(maxEntries int, maxBytes int64) *promptCache {
	return &promptCache{maxEntries: maxEntries, maxBytes: maxBytes, minReuse: 256}
}

// best returns the cached prompt sharing the longest prefix with text
// (for the same addSpecial), and that prefix's length; nil when none
// shares at least minReuse bytes.
func (c *promptCache) best(text string, addSpecial bool) (*promptEntry, int) {
	c.mu.Lock()
	var buf [64]*promptEntry
	cands := append(buf[:0], c.recent...)
	c.mu.Unlock()
	var best *promptEntry
	bestK := c.minReuse - 1
	for _, e := range cands {
		if e.addSpecial != addSpecial || len(e.text) <= bestK || len(text) <= bestK {
			continue
		}
		if k := commonPrefix(e.text, text); k > bestK {
			best, bestK = e, k
		}
	}
	return best, bestK
}

// put stores e, dropping the entries whose text is a prefix of e's (e
// resumes wherever they would) and the least recent ones over the
// bounds; it counts the prompt's outcome.
func (c *promptCache) put(e *promptEntry, reused int) {
	e.cost = int64(len(e.text)) + 4*int64(len(e.ids)) + 32*int64(len(e.matches)) + 16*int64(len(e.marks)) + entryOverhead
	c.mu.Lock()
	defer c.mu.Unlock()
	if reused > 0 {
		c.hits++
	} else {
		c.misses++
	}
	c.reused += uint64(reused)
	c.encoded += uint64(len(e.ids) - reused)
	if e.cost > c.maxBytes/4 { // one huge prompt must not flush the rest
		return
	}
	kept := make([]*promptEntry, 1, len(c.recent)+1)
	kept[0] = e
	for _, old := range c.recent {
		if old.addSpecial == e.addSpecial && len(old.text) <= len(e.text) && e.text[:len(old.text)] == old.text {
			c.bytes -= old.cost
			continue
		}
		kept = append(kept, old)
	}
	c.bytes += e.cost
	for len(kept) > c.maxEntries || c.bytes > c.maxBytes {
		c.bytes -= kept[len(kept)-1].cost
		kept = kept[:len(kept)-1]
	}
	c.recent = kept
}

// PromptCacheStats is a snapshot of the prompt cache's counters.
type PromptCacheStats struct {
	// Hits: prompts that resumed from a cached prompt's prefix; Misses:
	// prompts encoded in full.
	Hits, Misses uint64
	// ReusedTokens: ids taken from cached prompts; EncodedTokens: ids the
	// cached prompts' encodings computed.
	ReusedTokens, EncodedTokens uint64
	Entries                     int
	Bytes                       int64
}

func (c *promptCache) stats() PromptCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return PromptCacheStats{Hits: c.hits, Misses: c.misses, ReusedTokens: c.reused, EncodedTokens: c.encoded,
		Entries: len(c.recent), Bytes: c.bytes}
}

// commonPrefix returns the length of the longest common prefix of a and b,
// comparing in blocks first (string equality is vectorized).
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+4096 <= n && a[i:i+4096] == b[i:i+4096] {
		i += 4096
	}
	for i+64 <= n && a[i:i+64] == b[i:i+64] {
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// markable reports whether encoding can resume right after s[j-1] (see
// the rules above): the byte is ASCII and not whitespace.
func markable(s string, j int) bool {
	b := s[j-1]
	return b < utf8.RuneSelf && asciiClass[b] != clSpace && asciiClass[b] != clNewline
}
