package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// isByteLevel reports whether a pre_tokenizer is ByteLevel or a Sequence
// containing one (the tiktoken-style path of [FromJSON]).
func isByteLevel(raw json.RawMessage) bool {
	switch typeOf(raw) {
	case "ByteLevel":
		return true
	case "Sequence":
		var seq struct {
			Pretokenizers []json.RawMessage `json:"pretokenizers"`
		}
		_ = json.Unmarshal(raw, &seq)
		for _, p := range seq.Pretokenizers {
			if typeOf(p) == "ByteLevel" {
				return true
			}
		}
	}
	return false
}

// newSPMCore builds the core of a SentencePiece-family tokenizer.json: a
// BPE (characters, merges-list priority, optional byte fallback) or
// Unigram model behind no pre-tokenizer, a Metaspace one (optionally
// after WhitespaceSplit), or a Split on " " that the normalizer makes a
// no-op. spacesRemoved says the normalizer replaces every " ".
func newSPMCore(f *hfFile, spacesRemoved bool) (*spmCore, error) {
	m := &f.Model
	c := &spmCore{unk: -1, fuseUnk: m.FuseUnk != nil && *m.FuseUnk, byteFallback: m.ByteFallback, ignoreMerges: m.IgnoreMerges}
	for i := range c.byteID {
		c.byteID[i] = -1
	}
	if err := c.parsePreTokenizer(f.PreTokenizer, spacesRemoved); err != nil {
		return nil, err
	}
	switch m.Type {
	case "Unigram":
		if err := c.loadUnigram(m); err != nil {
			return nil, err
		}
	case "BPE", "":
		if err := c.loadBPE(m); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("model type %s: %w", m.Type, ErrUnsupported)
	}
	for i := range c.asciiID {
		c.asciiID[i] = -1
	}
	for s, id := range c.vocab {
		if b, ok := byteFallbackPiece(s); ok {
			c.byteID[b] = int32(id)
		}
		if len(s) == 1 && s[0] < 0x80 {
			c.asciiID[s[0]] = int32(id)
		}
	}
	if err := c.setPieces(f.Decoder); err != nil {
		return nil, err
	}
	c.words = &wordCache{}
	return c, nil
}

// maxVocabID bounds ids, which index dense tables.
func maxVocabID(n int) int64 { return int64(n) + 1<<20 }

func (c *spmCore) loadBPE(m *hfModel) error {
	switch {
	case m.Dropout != nil && *m.Dropout != 0:
		return fmt.Errorf("BPE dropout: %w", ErrUnsupported)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "",
		m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return fmt.Errorf("BPE with subword prefix/suffix: %w", ErrUnsupported)
	}
	if err := json.Unmarshal(m.Vocab, &c.vocab); err != nil {
		return fmt.Errorf("tokenizer: BPE vocab: %w", err)
	}
	if len(c.vocab) == 0 {
		return fmt.Errorf("tokenizer: tokenizer.json has an empty vocab")
	}
	for s, id := range c.vocab {
		if int64(id) >= maxVocabID(len(c.vocab)) {
			return fmt.Errorf("tokenizer: vocab id %d of %q is far beyond the vocab size %d", id, s, len(c.vocab))
		}
	}
	if m.UnkToken != nil {
		if id, ok := c.vocab[*m.UnkToken]; ok {
			c.unk = int32(id)
		} else if *m.UnkToken != "" {
			// HF fails at the first unknown character; refuse up front.
			return fmt.Errorf("tokenizer: unk_token %q is not in the vocab", *m.UnkToken)
		}
	}
	c.merges = newMergeTable(len(m.Merges))
	for i, raw := range m.Merges {
		a, b, err := mergePair(i, raw)
		if err != nil {
			return err
		}
		ia, okA := c.vocab[a]
		ib, okB := c.vocab[b]
		id, okAB := c.vocab[a+b]
		if !okA || !okB || !okAB {
			return fmt.Errorf("tokenizer: merge %d (%q %q) is out of the vocab", i, a, b)
		}
		c.merges.add(pairKey(ia, ib), spMerge{rank: uint32(i), id: id})
	}
	if !c.ignoreMerges {
		c.joined = map[uint64]struct{}{}
		for s := range c.vocab {
			prev := rune(-1)
			for _, r := range s {
				if prev >= 0 && (isCutMarker(prev) || isCutMarker(r)) {
					c.joined[runePair(prev, r)] = struct{}{}
				}
				prev = r
			}
		}
	}
	return nil
}

// mergePair reads a merges entry: "a b" or ["a", "b"]. Entries without an
// escape are cut by hand (a JSON string without a backslash holds no
// quote); json.Unmarshal per entry was a quarter of loading Gemma 3.
func mergePair(i int, raw json.RawMessage) (a, b string, err error) {
	r := bytes.TrimSpace(raw)
	if bytes.IndexByte(r, '\\') < 0 && utf8.Valid(r) {
		if len(r) >= 2 && r[0] == '"' && r[len(r)-1] == '"' {
			var ok bool
			if a, b, ok = strings.Cut(string(r[1:len(r)-1]), " "); ok {
				return a, b, nil
			}
		} else if f := bytes.Split(r, []byte{'"'}); len(f) == 5 &&
			string(bytes.TrimSpace(f[0])) == "[" && string(bytes.TrimSpace(f[2])) == "," && string(bytes.TrimSpace(f[4])) == "]" {
			return string(f[1]), string(f[3]), nil
		}
	}
	var pair []string
	if json.Unmarshal(raw, &pair) == nil && len(pair) == 2 {
		return pair[0], pair[1], nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", "", fmt.Errorf("tokenizer: merge %d: %w", i, err)
	}
	var ok bool
	if a, b, ok = strings.Cut(s, " "); !ok {
		return "", "", fmt.Errorf("tokenizer: merge %d %q has no space", i, s)
	}
	return a, b, nil
}

func (c *spmCore) loadUnigram(m *hfModel) error {
	if m.ByteFallback {
		return fmt.Errorf("Unigram with byte_fallback: %w", ErrUnsupported)
	}
	var vocab []struct {
		piece string
		score float64
	}
	var rows [][2]json.RawMessage
	if err := json.Unmarshal(m.Vocab, &rows); err != nil {
		return fmt.Errorf("tokenizer: Unigram vocab: %w", err)
	}
	if len(rows) == 0 {
		return fmt.Errorf("tokenizer: tokenizer.json has an empty vocab")
	}
	for i, r := range rows {
		var v struct {
			piece string
			score float64
		}
		if err := json.Unmarshal(r[0], &v.piece); err != nil {
			return fmt.Errorf("tokenizer: Unigram vocab %d: %w", i, err)
		}
		if err := json.Unmarshal(r[1], &v.score); err != nil {
			return fmt.Errorf("tokenizer: Unigram vocab %d: %w", i, err)
		}
		vocab = append(vocab, v)
	}
	if m.UnkID == nil || *m.UnkID < 0 || *m.UnkID >= len(vocab) {
		return fmt.Errorf("tokenizer: Unigram model without a valid unk_id")
	}
	u := &unigram{scores: make([]float64, len(vocab))}
	c.vocab = make(map[string]uint32, len(vocab))
	minScore := math.Inf(1)
	for id, v := range vocab {
		c.vocab[v.piece] = uint32(id)
		u.scores[id] = v.score
		minScore = math.Min(minScore, v.score)
		u.maxLen = max(u.maxLen, len(v.piece))
	}
	u.unkScore = minScore - 10
	u.scores[*m.UnkID] = u.unkScore
	c.unk = int32(*m.UnkID)
	c.uni = u
	c.fuseUnk = true
	return nil
}

// parsePreTokenizer accepts null, Metaspace, Sequence[WhitespaceSplit,
// Metaspace], and Split on the string " " when the normalizer has removed
// every space (Gemma 3: then it never splits).
func (c *spmCore) parsePreTokenizer(raw json.RawMessage, spacesRemoved bool) error {
	if isNull(raw) {
		return nil
	}
	switch t := typeOf(raw); t {
	case "Metaspace":
		return c.parseMetaspace(raw)
	case "Split":
		var sp struct {
			Pattern struct {
				String *string `json:"String"`
			} `json:"pattern"`
		}
		_ = json.Unmarshal(raw, &sp)
		if sp.Pattern.String != nil && *sp.Pattern.String == " " && spacesRemoved {
			return nil
		}
		return fmt.Errorf("pre-tokenizer Split (other than on spaces the normalizer removed) for a SentencePiece-style model: %w", ErrUnsupported)
	case "Sequence":
		var seq struct {
			Pretokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return fmt.Errorf("tokenizer: pre_tokenizer: %w", err)
		}
		var types []string
		for _, p := range seq.Pretokenizers {
			types = append(types, typeOf(p))
		}
		switch strings.Join(types, ",") {
		case "Metaspace":
			return c.parseMetaspace(seq.Pretokenizers[0])
		case "WhitespaceSplit,Metaspace":
			c.wsSplit = true
			return c.parseMetaspace(seq.Pretokenizers[1])
		}
		return fmt.Errorf("pre-tokenizer Sequence%v for a SentencePiece-style model: %w", types, ErrUnsupported)
	default:
		return fmt.Errorf("pre-tokenizer %s: %w", t, ErrUnsupported)
	}
}

func (c *spmCore) parseMetaspace(raw json.RawMessage) error {
	var ms struct {
		Replacement    string  `json:"replacement"`
		PrependScheme  *string `json:"prepend_scheme"`
		AddPrefixSpace *bool   `json:"add_prefix_space"` // before prepend_scheme
		Split          *bool   `json:"split"`
	}
	if err := json.Unmarshal(raw, &ms); err != nil {
		return fmt.Errorf("tokenizer: Metaspace: %w", err)
	}
	if ms.Replacement != metaSpace {
		return fmt.Errorf("Metaspace replacement %q (only %q): %w", ms.Replacement, metaSpace, ErrUnsupported)
	}
	meta := &metaspace{prepend: "always", split: ms.Split == nil || *ms.Split}
	switch {
	case ms.PrependScheme != nil:
		meta.prepend = *ms.PrependScheme
	case ms.AddPrefixSpace != nil && !*ms.AddPrefixSpace:
		meta.prepend = "never"
	}
	if meta.prepend != "always" && meta.prepend != "first" && meta.prepend != "never" {
		return fmt.Errorf("Metaspace prepend_scheme %q: %w", meta.prepend, ErrUnsupported)
	}
	c.meta = meta
	return nil
}

// setPieces fills the id -> bytes table of Decode from the decoder:
// Replace "▁" -> " " or Metaspace turn the marker back into spaces,
// ByteFallback turns <0xXX> into its byte.
func (c *spmCore) setPieces(decoder json.RawMessage) error {
	d, err := parseSPDecoder(decoder)
	if err != nil {
		return err
	}
	maxID := uint32(0)
	for _, id := range c.vocab {
		maxID = max(maxID, id)
	}
	c.pieces = make([][]byte, maxID+1)
	for s, id := range c.vocab {
		if b, ok := byteFallbackPiece(s); ok && d.byteFallback {
			c.pieces[id] = []byte{b}
			continue
		}
		if d.metaToSpace {
			s = strings.ReplaceAll(s, metaSpace, " ")
		}
		c.pieces[id] = []byte(s)
	}
	return nil
}

// spDecoder is what Decode takes from tokenizer.json's decoder.
type spDecoder struct {
	metaToSpace  bool
	byteFallback bool
	stripLeading int // spaces removed from the start of the decoded text
}

func parseSPDecoder(raw json.RawMessage) (spDecoder, error) {
	var d spDecoder
	if isNull(raw) {
		return d, nil
	}
	var parts []json.RawMessage
	if typeOf(raw) == "Sequence" {
		var seq struct {
			Decoders []json.RawMessage `json:"decoders"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return d, fmt.Errorf("tokenizer: decoder: %w", err)
		}
		parts = seq.Decoders
	} else {
		parts = []json.RawMessage{raw}
	}
	for _, p := range parts {
		switch typeOf(p) {
		case "Replace":
			var r struct {
				Pattern struct {
					String *string `json:"String"`
				} `json:"pattern"`
				Content string `json:"content"`
			}
			_ = json.Unmarshal(p, &r)
			if r.Pattern.String != nil && *r.Pattern.String == metaSpace && r.Content == " " {
				d.metaToSpace = true
			}
		case "ByteFallback":
			d.byteFallback = true
		case "Strip":
			var s struct {
				Content string `json:"content"`
				Start   int    `json:"start"`
			}
			_ = json.Unmarshal(p, &s)
			if s.Content == " " {
				d.stripLeading = max(0, min(s.Start, 16))
			}
		case "Metaspace":
			var ms struct {
				PrependScheme  *string `json:"prepend_scheme"`
				AddPrefixSpace *bool   `json:"add_prefix_space"`
			}
			_ = json.Unmarshal(p, &ms)
			d.metaToSpace = true
			if (ms.PrependScheme == nil && (ms.AddPrefixSpace == nil || *ms.AddPrefixSpace)) || (ms.PrependScheme != nil && *ms.PrependScheme != "never") {
				d.stripLeading = 1
			}
		}
	}
	return d, nil
}
