package tokenizer

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/zeebo/xxh3"
)

// metaSpace is SentencePiece's whitespace marker "▁" (U+2581).
const metaSpace = "\u2581"

// spmCore encodes text for SentencePiece-family tokenizer.json files (Llama
// 2, Mistral, Gemma, T5-style): a BPE model over characters whose merge
// priority is the merges list's order, with byte fallback, or a Unigram
// model (Viterbi over piece scores), behind an optional Metaspace
// pre-tokenizer. It follows HF tokenizers' BPE::merge_word / Word::merge_all
// and Unigram::encode_optimized.
type spmCore struct {
	vocab        map[string]uint32
	pieces       [][]byte   // id -> decoded bytes (Decode); nil: no such id
	byteID       [256]int32 // id of "<0xXX>", -1: none
	asciiID      [128]int32 // id of the one-byte token, -1: none
	unk          int32      // unk token id, -1: none
	byteFallback bool
	fuseUnk      bool
	ignoreMerges bool
	merges       *mergeTable // BPE: (left id, right id) -> merge
	uni          *unigram    // Unigram model; nil for BPE
	meta         *metaspace  // Metaspace pre-tokenizer; nil: none
	wsSplit      bool        // WhitespaceSplit before Metaspace
	// joined holds every pair of adjacent runes inside a vocab token where
	// one of them is a cut marker ("▁", "\n", "\t"). A BPE word can be cut
	// between two runes, one a marker, whose pair is not in it: no token
	// (hence no merge) spans that point, so the pieces encode
	// independently to the same ids, and short pieces hit the word cache.
	// nil: never cut (Unigram, whose float path scores must not be
	// re-associated, and ignore_merges, which looks at whole words).
	joined map[uint64]struct{}
	words  *wordCache
}

// wordCache memoizes the ids of short words (the pieces the model
// encodes): real text repeats its words, and a hit costs a hash and a
// compare instead of a dozen lookups in a 500k-entry merges map. It is a
// direct-mapped table of immutable entries swapped atomically, so readers
// take no lock, and its size is fixed: wordCacheSlots entries of words of
// at most maxCachedWord bytes (256 KB of slots plus about 3-4 MB of
// entries on real text, 8 MB at worst). Exact: a word's ids depend on the
// word alone.
type wordCache struct {
	slots [wordCacheSlots]atomic.Pointer[wordEntry]
}

type wordEntry struct {
	word string
	ids  []uint32
}

const (
	wordCacheSlots = 1 << 15
	maxCachedWord  = 48
)

func (wc *wordCache) get(w string) ([]uint32, bool) {
	e := wc.slots[xxh3.HashString(w)&(wordCacheSlots-1)].Load()
	if e == nil || e.word != w {
		return nil, false
	}
	return e.ids, true
}

func (wc *wordCache) put(w string, ids []uint32) {
	e := &wordEntry{word: strings.Clone(w), ids: slices.Clone(ids)}
	wc.slots[xxh3.HashString(w)&(wordCacheSlots-1)].Store(e)
}

// spMerge is a BPE merge: its priority (index in the merges list) and the
// id of the merged token.
type spMerge struct{ rank, id uint32 }

func pairKey(a, b uint32) uint64 { return uint64(a)<<32 | uint64(b) }

// metaspace is the Metaspace pre-tokenizer: spaces become "▁", a "▁" is
// prepended (scheme always, or first: only for the text's first word), and
// with split the word is cut before every "▁" (MergedWithNext).
type metaspace struct {
	prepend string // "always", "first" or "never"
	split   bool
}

// unigram holds a Unigram model's scores.
type unigram struct {
	scores   []float64 // by id; the unk's is unkScore
	unkScore float64   // lowest score minus 10, as HF
	maxLen   int       // longest piece, bytes
}

// firstSegmenter is implemented by cores whose pre-tokenizer treats the
// text's first segment specially (Metaspace prepend_scheme "first").
type firstSegmenter interface {
	needsFirst() bool
	appendFirstStop(dst []uint32, text string, stop func() bool) []uint32
}

func (c *spmCore) needsFirst() bool { return c.meta != nil && c.meta.prepend == "first" }

func (c *spmCore) appendOrdinary(dst []uint32, text string) []uint32 {
	return c.encode(dst, text, false, nil)
}

func (c *spmCore) appendOrdinaryStop(dst []uint32, text string, stop func() bool) []uint32 {
	return c.encode(dst, text, false, stop)
}

func (c *spmCore) appendFirstStop(dst []uint32, text string, stop func() bool) []uint32 {
	return c.encode(dst, text, true, stop)
}

func (c *spmCore) tokenBytes(id uint32) ([]byte, bool) {
	if int(id) >= len(c.pieces) || c.pieces[id] == nil {
		return nil, false
	}
	return c.pieces[id], true
}

// encode appends the ids of text (normalized, no added tokens); first says
// the text starts the whole input (offset 0).
func (c *spmCore) encode(dst []uint32, text string, first bool, stop func() bool) []uint32 {
	text = validUTF8(text)
	if !c.wsSplit {
		return c.encodeWord(dst, text, first, stop)
	}
	// WhitespaceSplit: words are the runs of non-whitespace (\S+).
	for i, n := 0, 0; i < len(text); n++ {
		if stop != nil && n%stopEvery == stopEvery-1 && stop() {
			return dst
		}
		start := strings.IndexFunc(text[i:], func(r rune) bool { return !unicode.IsSpace(r) })
		if start < 0 {
			break
		}
		start += i
		end := strings.IndexFunc(text[start:], unicode.IsSpace)
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		dst = c.encodeWord(dst, text[start:end], first && start == 0, stop)
		i = end
	}
	return dst
}

// encodeWord runs the Metaspace step on one pre-tokenized word and encodes
// the pieces it yields.
func (c *spmCore) encodeWord(dst []uint32, w string, first bool, stop func() bool) []uint32 {
	split := false
	if c.meta != nil {
		w = strings.ReplaceAll(w, " ", metaSpace)
		if (c.meta.prepend == "always" || (c.meta.prepend == "first" && first)) && !strings.HasPrefix(w, metaSpace) {
			w = metaSpace + w
		}
		split = c.meta.split
	}
	if !split && c.joined == nil {
		return c.encodePiece(dst, w, stop)
	}
	var scratch []uint32
	start := 0
	for i, n := 0, 0; i < len(w); n++ {
		if stop != nil && n%stopEvery == stopEvery-1 && stop() {
			return dst
		}
		for i < len(w) && !isCutByte[w[i]] {
			i++
		}
		if i == len(w) {
			break
		}
		mlen := 1
		if w[i] == metaSpace[0] {
			if !strings.HasPrefix(w[i:], metaSpace) {
				i++
				continue
			}
			mlen = len(metaSpace)
		}
		// Cut before the marker (always before "▁" under Metaspace split)
		// and after it, where the model allows.
		if i > start && ((split && mlen > 1) || c.canCut(w, i)) {
			dst, scratch = c.encodePieceBuf(dst, w[start:i], scratch, stop)
			start = i
		}
		i += mlen
		if i < len(w) && c.canCut(w, i) {
			dst, scratch = c.encodePieceBuf(dst, w[start:i], scratch, stop)
			start = i
		}
	}
	dst, _ = c.encodePieceBuf(dst, w[start:], scratch, stop)
	return dst
}

// isCutByte marks the first bytes of the cut markers.
var isCutByte = [256]bool{'\n': true, '\t': true, 0xE2: true} // 0xE2: "▁"[0]

// isCutMarker reports whether r is a cut marker.
func isCutMarker(r rune) bool { return r == '\n' || r == '\t' || r == '\u2581' }

// canCut reports whether no vocab token spans the point p of w (0 < p <
// len(w)), judged by the runes on either side (one of them a marker).
func (c *spmCore) canCut(w string, p int) bool {
	if c.joined == nil {
		return false
	}
	a, _ := utf8.DecodeLastRuneInString(w[:p])
	b, _ := utf8.DecodeRuneInString(w[p:])
	_, ok := c.joined[runePair(a, b)]
	return !ok
}

func runePair(a, b rune) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func (c *spmCore) encodePiece(dst []uint32, w string, stop func() bool) []uint32 {
	dst, _ = c.encodePieceBuf(dst, w, nil, stop)
	return dst
}

// encodePieceBuf encodes one word with the model; scratch is reused.
func (c *spmCore) encodePieceBuf(dst []uint32, w string, scratch []uint32, stop func() bool) ([]uint32, []uint32) {
	if w == "" {
		return dst, scratch
	}
	if c.words == nil || len(w) > maxCachedWord {
		return c.encodeModel(dst, w, scratch, stop)
	}
	if ids, ok := c.words.get(w); ok {
		return append(dst, ids...), scratch
	}
	n := len(dst)
	dst, scratch = c.encodeModel(dst, w, scratch, stop)
	c.words.put(w, dst[n:])
	return dst, scratch
}

// encodeModel runs the model on one word.
func (c *spmCore) encodeModel(dst []uint32, w string, scratch []uint32, stop func() bool) ([]uint32, []uint32) {
	if c.uni != nil {
		return c.unigramWord(dst, w, stop), scratch
	}
	if c.ignoreMerges {
		if id, ok := c.vocab[w]; ok {
			return append(dst, id), scratch
		}
	}
	syms := c.initialSymbols(scratch[:0], w)
	if len(syms) >= longPiece {
		return append(dst, c.mergeHeap(syms, stop)...), syms[:0]
	}
	syms = c.mergeScan(syms)
	return append(dst, syms...), syms[:0]
}

// initialSymbols is HF's merge_word before merging: one symbol per
// character in the vocab, else its bytes as <0xXX> tokens (byte
// fallback), else the unk token (consecutive ones fused when fuse_unk),
// else nothing.
func (c *spmCore) initialSymbols(syms []uint32, w string) []uint32 {
	pendingUnk := false
	for i := 0; i < len(w); {
		if b := w[i]; b < utf8.RuneSelf && c.asciiID[b] >= 0 && !pendingUnk {
			syms = append(syms, uint32(c.asciiID[b]))
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(w[i:])
		ch := w[i : i+n]
		i += n
		if id, ok := c.vocab[ch]; ok {
			if pendingUnk {
				syms = append(syms, uint32(c.unk))
				pendingUnk = false
			}
			syms = append(syms, id)
			continue
		}
		if c.byteFallback && c.hasBytes(ch) {
			// NB: as HF, a pending unk is not flushed before the bytes.
			for k := 0; k < len(ch); k++ {
				syms = append(syms, uint32(c.byteID[ch[k]]))
			}
			continue
		}
		if c.unk < 0 {
			continue
		}
		if pendingUnk && !c.fuseUnk {
			syms = append(syms, uint32(c.unk))
		}
		pendingUnk = true
	}
	if pendingUnk {
		syms = append(syms, uint32(c.unk))
	}
	return syms
}

func (c *spmCore) hasBytes(ch string) bool {
	for k := 0; k < len(ch); k++ {
		if c.byteID[ch[k]] < 0 {
			return false
		}
	}
	return true
}

func (c *spmCore) merge(a, b uint32) (spMerge, bool) {
	return c.merges.get(pairKey(a, b))
}

// mergeTable maps a pair of ids to its merge: an open-addressing hash
// table (linear probing, at most 70% full; 16 MB for Gemma's 580k merges),
// which the merge loops probe a dozen times per word; a Go map of 500k
// entries took 2-3x as long per random lookup (cache misses).
type mergeTable struct {
	slots []mergeSlot
	shift uint // 64 - log2(len(slots))
}

type mergeSlot struct {
	key1 uint64 // key+1; 0: empty
	m    spMerge
}

func newMergeTable(n int) *mergeTable {
	bits := uint(4)
	for 1<<bits < n*10/7+1 {
		bits++
	}
	return &mergeTable{slots: make([]mergeSlot, 1<<bits), shift: 64 - bits}
}

func (t *mergeTable) slot(key uint64) int { return int((key * 0x9E3779B97F4A7C15) >> t.shift) }

func (t *mergeTable) get(key uint64) (spMerge, bool) {
	mask := len(t.slots) - 1
	for i := t.slot(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key1 == key+1 {
			return s.m, true
		}
		if s.key1 == 0 {
			return spMerge{}, false
		}
	}
}

// add inserts key unless present (the first merge of a pair wins).
func (t *mergeTable) add(key uint64, m spMerge) {
	mask := len(t.slots) - 1
	for i := t.slot(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key1 == key+1 {
			return
		}
		if s.key1 == 0 {
			*s = mergeSlot{key1: key + 1, m: m}
			return
		}
	}
}

// mergeScan applies merges, lowest rank first and leftmost among equal
// ranks, by scanning the pairs: quadratic, fastest for words.
func (c *spmCore) mergeScan(syms []uint32) []uint32 {
	if len(syms) < 2 {
		return syms
	}
	var buf [longPiece]spMerge
	pairs := buf[:0] // pairs[i]: the merge of syms[i], syms[i+1]
	for i := 0; i+1 < len(syms); i++ {
		pairs = append(pairs, c.pairMerge(syms[i], syms[i+1]))
	}
	for {
		best, bi := uint32(math.MaxUint32), -1
		for i, p := range pairs {
			if p.rank < best {
				best, bi = p.rank, i
			}
		}
		if bi < 0 {
			return syms
		}
		syms[bi] = pairs[bi].id
		syms = append(syms[:bi+1], syms[bi+2:]...)
		pairs = append(pairs[:bi], pairs[bi+1:]...)
		if bi > 0 {
			pairs[bi-1] = c.pairMerge(syms[bi-1], syms[bi])
		}
		if bi < len(pairs) {
			pairs[bi] = c.pairMerge(syms[bi], syms[bi+1])
		}
	}
}

// pairMerge returns the merge of a and b, rank math.MaxUint32 if none.
func (c *spmCore) pairMerge(a, b uint32) spMerge {
	if m, ok := c.merge(a, b); ok {
		return m
	}
	return spMerge{rank: math.MaxUint32}
}

// mergeHeap is mergeScan's merge order with the candidate pairs in a heap
// and the symbols in a linked list: O(n log n) for long words (a page of
// CJK text or a long run of spaces is one word). A heap entry is stale
// once either of its symbols changed; it is then skipped, as in HF.
func (c *spmCore) mergeHeap(syms []uint32, stop func() bool) []uint32 {
	n := len(syms)
	next := make([]int32, n) // next live symbol, n at the end
	prev := make([]int32, n) // previous live symbol, -1 at the start
	dead := make([]bool, n)
	for i := range n {
		next[i], prev[i] = int32(i+1), int32(i-1)
	}
	h := make(pairHeap, 0, n) // gen, genR: the pair's ids when pushed
	push := func(i int32) {
		j := next[i]
		if int(j) >= n {
			return
		}
		if m, ok := c.merge(syms[i], syms[j]); ok {
			h = append(h, pair{rank: m.rank, at: i, gen: syms[i], genR: syms[j]})
		}
	}
	for i := range int32(n - 1) {
		push(i)
	}
	heap.Init(&h)
	for pops := 0; h.Len() > 0; pops++ {
		if stop != nil && pops%stopEvery == stopEvery-1 && stop() {
			break
		}
		p := heap.Pop(&h).(pair)
		j := next[p.at]
		if dead[p.at] || int(j) >= n || syms[p.at] != p.gen || syms[j] != p.genR {
			continue
		}
		m, _ := c.merge(p.gen, p.genR)
		syms[p.at] = m.id
		dead[j] = true
		next[p.at] = next[j]
		if int(next[j]) < n {
			prev[next[j]] = p.at
		}
		before := h.Len()
		push(p.at)
		if q := prev[p.at]; q >= 0 {
			push(q)
		}
		for k := before; k < h.Len(); k++ {
			heap.Fix(&h, k)
		}
	}
	out := syms[:0]
	for i := 0; i < n; i = int(next[i]) {
		out = append(out, syms[i])
	}
	return out
}

// unigramWord is HF's Unigram::encode_optimized: the best-scoring
// segmentation (Viterbi), ties to the earliest-starting last piece, a
// character no single-character piece covers becoming unk (score: lowest
// minus 10), consecutive unks fused.
// stop (nil: never) gives up with nothing appended.
func (c *spmCore) unigramWord(dst []uint32, w string, stop func() bool) []uint32 {
	n := len(w)
	type node struct { // 16 bytes per byte of w
		score float64
		start int32 // -1: unreached
		id    int32
	}
	best := make([]node, n+1)
	for i := range best {
		best[i].start = -1
	}
	best[0].start = 0
	for i, steps := 0, 0; i < n; steps++ {
		if stop != nil && steps%stopEvery == stopEvery-1 && stop() {
			return dst
		}
		_, rl := utf8.DecodeRuneInString(w[i:])
		single := false
		for j := i + rl; j <= n && j-i <= c.uni.maxLen; {
			if id, ok := c.vocab[w[i:j]]; ok {
				s := best[i].score + c.uni.scores[id]
				if best[j].start < 0 || s > best[j].score {
					best[j] = node{score: s, start: int32(i), id: int32(id)}
				}
				if j == i+rl {
					single = true
				}
			}
			if j == n {
				break
			}
			_, k := utf8.DecodeRuneInString(w[j:])
			j += k
		}
		if !single {
			j := i + rl
			s := best[i].score + c.uni.unkScore
			if best[j].start < 0 || s > best[j].score {
				best[j] = node{score: s, start: int32(i), id: c.unk}
			}
		}
		i += rl
	}
	// Backtrack, then append in order with unks fused.
	var rev []int32
	for j := n; j > 0; j = int(best[j].start) {
		rev = append(rev, best[j].id)
	}
	for k := len(rev) - 1; k >= 0; k-- {
		id := rev[k]
		if id == c.unk && k+1 < len(rev) && rev[k+1] == c.unk {
			continue // fused with the previous unk
		}
		dst = append(dst, uint32(id))
	}
	return dst
}

// byteFallbackPiece parses "<0xXX>".
func byteFallbackPiece(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	var b byte
	if _, err := fmt.Sscanf(s[3:5], "%02X", &b); err != nil {
		return 0, false
	}
	return b, true
}
