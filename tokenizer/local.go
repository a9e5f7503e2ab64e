package tokenizer

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Options configures a [Local] tokenizer. The zero value is valid.
type Options struct {
	// Name overrides the tokenizer's name. Default ("" ): the model
	// directory's base name for [Load], "hf" for [FromJSON], the encoding
	// name for [Default].
	Name string
	// CacheBytes bounds the segment cache (cached text plus ids, bytes).
	// Default (0): [DefaultCacheBytes]. Negative disables the cache.
	CacheBytes int64
	// MinCacheSegment is the shortest plain-text segment (bytes) worth
	// caching; shorter ones are encoded directly. Default (0): 256.
	MinCacheSegment int
	// PromptCacheEntries and PromptCacheBytes bound the prompt cache:
	// recent prompts whose ids a prompt that extends one of them (the next
	// turn of a chat) resumes from, encoding only the rest (prompts.go).
	// Default (0): [DefaultPromptCacheEntries], [DefaultPromptCacheBytes].
	// Negative (either) disables it.
	PromptCacheEntries int
	PromptCacheBytes   int64
}

// Cache budgets when the Options leave them 0.
const (
	DefaultCacheBytes         = 64 << 20
	DefaultPromptCacheEntries = 64
	DefaultPromptCacheBytes   = 32 << 20
)

// core encodes text that contains no added tokens, already normalized.
type core interface {
	appendOrdinary(dst []uint32, text string) []uint32
	// appendOrdinaryStop is appendOrdinary, returning early (a partial
	// result) once stop (nil: never) reports true.
	appendOrdinaryStop(dst []uint32, text string, stop func() bool) []uint32
	// tokenBytes returns the raw bytes of a vocabulary (non-added) token.
	tokenBytes(id uint32) ([]byte, bool)
}

// Local is an in-process tokenizer: a HuggingFace ByteLevel BPE or
// SentencePiece-style model ([Load], [FromJSON]) or the built-in encoding
// ([Default]). It implements
// [Tokenizer] and adds context-free methods for callers that do not need the
// remote mode. Safe for concurrent use.
type Local struct {
	name      string
	core      core
	special   *matcher // added tokens; never nil
	normalize func(string) string
	prefix    []uint32 // post-processor ids before the sequence (add_special_tokens=True)
	suffix    []uint32 // ... and after it
	tmpl      *ChatTemplate
	cache     *segmentCache // nil when disabled
	minCache  int
	prompts   *promptCache // nil when disabled
	// nfc: the normalizer is NFC alone, which leaves a segment's split at
	// two ASCII bytes unchanged (prompts.go)
	nfc bool
	// decodeStrip is how many leading spaces Decode removes (the Strip or
	// Metaspace decoder of SentencePiece-style models).
	decodeStrip int
	// decodeMeta: Decode turns "▁" in added tokens into spaces too (the
	// decoder's Replace applies to every token).
	decodeMeta bool
}

var _ Tokenizer = (*Local)(nil)

func newLocal(name string, c core, added []addedToken, norm func(string) string, opts Options) *Local {
	l := &Local{name: name, core: c, special: newMatcher(added), normalize: norm, minCache: opts.MinCacheSegment}
	if opts.Name != "" {
		l.name = opts.Name
	}
	if l.minCache <= 0 {
		l.minCache = 256
	}
	switch {
	case opts.CacheBytes == 0:
		l.cache = newSegmentCache(DefaultCacheBytes)
	case opts.CacheBytes > 0:
		l.cache = newSegmentCache(opts.CacheBytes)
	}
	if opts.PromptCacheEntries >= 0 && opts.PromptCacheBytes >= 0 {
		l.prompts = newPromptCache(cmp.Or(opts.PromptCacheEntries, DefaultPromptCacheEntries),
			cmp.Or(opts.PromptCacheBytes, DefaultPromptCacheBytes))
	}
	return l
}

// Name implements [Tokenizer].
func (l *Local) Name() string { return l.name }

// Encode implements [Tokenizer]; it never blocks, and fails only if ctx is
// done: checked before and, every few thousand pieces or merges, during
// the encoding (an 8 MB one-word prompt costs seconds of CPU; a client
// that left stops that cost).
func (l *Local) Encode(ctx context.Context, prompt string) ([]uint32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids := l.encodeText(prompt, true, stopOn(ctx))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return ids, nil
}

// stopOn is the encoder's stop check for ctx (nil when ctx cannot end).
func stopOn(ctx context.Context) func() bool {
	if ctx.Done() == nil {
		return nil
	}
	return func() bool { return ctx.Err() != nil }
}

// EncodeChat implements [Tokenizer].
func (l *Local) EncodeChat(ctx context.Context, msgs []Message, addGenerationPrompt bool) ([]uint32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	text, err := l.ApplyChatTemplate(msgs, addGenerationPrompt)
	if err != nil {
		return nil, err
	}
	ids := l.encodeText(text, false, stopOn(ctx))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return ids, nil
}

// ApplyChatTemplate renders the conversation like HF's
// apply_chat_template(msgs, tokenize=False, add_generation_prompt=...).
// It returns [ErrNoChatTemplate] when the model has none and wraps
// [ErrTemplate] when the template fails.
func (l *Local) ApplyChatTemplate(msgs []Message, addGenerationPrompt bool) (string, error) {
	if l.tmpl == nil {
		return "", fmt.Errorf("%s: %w", l.name, ErrNoChatTemplate)
	}
	return l.tmpl.Render(msgs, addGenerationPrompt)
}

// ChatTemplate returns the model's chat template, or nil if it has none.
func (l *Local) ChatTemplate() *ChatTemplate { return l.tmpl }

// EncodeText tokenizes text like HF's tokenizer.encode(text,
// add_special_tokens=addSpecialTokens): added tokens written in the text are
// recognized (leftmost-longest), the remaining segments are normalized and
// BPE-encoded, and with addSpecialTokens the post-processor's tokens (e.g. a
// BOS) are added.
func (l *Local) EncodeText(text string, addSpecialTokens bool) []uint32 {
	return l.encodeText(text, addSpecialTokens, nil)
}

// encodeText is EncodeText giving up (partial ids) once stop reports true.
// With the prompt cache, it resumes from the cached prompt sharing the
// longest prefix with text (prompts.go) and records text's own resumable
// points.
func (l *Local) encodeText(text string, addSpecialTokens bool, stop func() bool) []uint32 {
	var (
		rec  *promptEntry // text's record for the prompt cache; nil: none
		from *promptEntry // cached prompt to resume from
		k    int          // bytes it shares with text
	)
	if l.prompts != nil && len(text) >= l.prompts.minReuse {
		from, k = l.prompts.best(text, addSpecialTokens)
		// Cached texts are valid UTF-8: only the rest needs checking, from
		// a rune start before k (text[:v] is then from's, whole runes).
		v := 0
		if from != nil {
			v = max(0, k-utf8.UTFMax)
			for v > 0 && !utf8.RuneStart(text[v]) {
				v--
			}
		}
		if utf8.ValidString(text[v:]) {
			rec = &promptEntry{text: text, addSpecial: addSpecialTokens}
		} else {
			from = nil
		}
	}
	size := len(text)/3 + len(l.prefix) + len(l.suffix) + 4
	if from != nil {
		size = len(from.ids) + (len(text)-k)/2 + len(l.suffix) + 4
	}
	ids := make([]uint32, 0, size)
	if addSpecialTokens {
		ids = append(ids, l.prefix...)
	}
	pos, reused := 0, 0
	var piece *pieceMark // resume point inside the segment at pos
	if from != nil {
		ids, pos, piece = l.resume(ids, rec, from, k, text)
		reused = len(ids)
	}
	for pos < len(text) {
		m, ok := l.special.find(text, pos)
		end := len(text)
		if ok {
			end = m.segEnd
		}
		if piece != nil && l.resumable(text, piece.off, end) {
			for _, mk := range from.marks { // the segment's marks, up to piece
				if mk.off > pos && mk.off <= piece.off {
					rec.marks = append(rec.marks, mk)
				}
			}
			ids = append(ids[:0], from.ids[:piece.n]...)
			reused = len(ids)
			ids = l.encodeSegment(ids, text[piece.off:end], stop, rec, piece.off)
		} else {
			ids = l.appendSegment(ids, text[pos:end], pos == 0, stop, rec, pos)
		}
		piece = nil
		if !ok {
			break
		}
		ids = append(ids, m.id)
		if rec != nil {
			rec.matches = append(rec.matches, matchMark{segEnd: m.segEnd, next: m.next,
				extent: m.next + l.special.maxLen + utf8.UTFMax, n: len(ids)})
		}
		pos = m.next
	}
	if addSpecialTokens {
		ids = append(ids, l.suffix...)
	}
	if rec != nil && (stop == nil || !stop()) {
		rec.ids = slices.Clone(ids)
		if reused <= len(l.prefix) {
			reused = 0
		}
		l.prompts.put(rec, reused)
	}
	return ids
}

// resume copies into ids what text shares with the cached prompt from
// (k bytes in common): the ids up to the last added token whose match
// read only shared bytes, and returns where encoding goes on and the last
// piece mark of the next segment that only shared bytes decide (nil: none).
// It copies from's matches and marks up to pos into rec.
func (l *Local) resume(ids []uint32, rec, from *promptEntry, k int, text string) ([]uint32, int, *pieceMark) {
	pos, nm := 0, 0
	for nm < len(from.matches) && from.matches[nm].extent <= k {
		nm++
	}
	if nm > 0 {
		last := from.matches[nm-1]
		ids = append(ids[:0], from.ids[:last.n]...)
		pos = last.next
		rec.matches = append(rec.matches, from.matches[:nm]...)
	}
	// The segment at pos ends, in from, at its next match (or its end);
	// the marks up to UTFMax before that and before k are shared.
	endFrom := len(from.text)
	if nm < len(from.matches) {
		endFrom = from.matches[nm].segEnd
	}
	limit := min(k, endFrom) - utf8.UTFMax
	var piece *pieceMark
	for i := range from.marks {
		mk := &from.marks[i]
		if mk.off > limit {
			break
		}
		if mk.off <= pos {
			rec.marks = append(rec.marks, *mk)
			continue
		}
		piece = mk
	}
	return ids, pos, piece
}

// appendSegment encodes a text segment that contains no added token; first
// says it starts the text. With rec, a fastCore without a normalizer
// records the segment's piece marks (at offset base in the text).
// Invariant: segments are independent (BPE and the pre-tokenizer never look
// across an added token), so caching a segment's ids is exact. The one
// exception, a pre-tokenizer that treats the text's first segment apart
// (Metaspace prepend_scheme "first"), bypasses the cache for that segment.
func (l *Local) appendSegment(dst []uint32, seg string, first bool, stop func() bool, rec *promptEntry, base int) []uint32 {
	if seg == "" {
		return dst
	}
	if fs, ok := l.core.(firstSegmenter); ok && first && fs.needsFirst() {
		return fs.appendFirstStop(dst, l.norm(seg), stop)
	}
	if l.cache == nil || len(seg) < l.minCache {
		return l.encodeSegment(dst, seg, stop, rec, base)
	}
	// NB: the key is the raw segment, so a hit skips normalization too.
	key := segmentKey(seg)
	if ids, ok := l.cache.get(key); ok {
		return append(dst, ids...)
	}
	n := len(dst)
	dst = l.encodeSegment(dst, seg, stop, rec, base)
	if stop != nil && stop() {
		return dst // possibly partial: never cached
	}
	l.cache.put(key, dst[n:], len(seg))
	return dst
}

// encodeSegment runs the core on a segment, recording piece marks into
// rec where they are exact (see appendSegment): a fastCore, and no
// normalizer or NFC on a segment it leaves as is (the marks' offsets are
// then the text's).
func (l *Local) encodeSegment(dst []uint32, seg string, stop func() bool, rec *promptEntry, base int) []uint32 {
	ns := l.norm(seg)
	if fc, ok := l.core.(*fastCore); ok && rec != nil && (l.normalize == nil || l.nfc && ns == seg) {
		return fc.appendMarked(dst, ns, stop, &rec.marks, base)
	}
	return l.core.appendOrdinaryStop(dst, ns, stop)
}

// resumable reports whether the segment ending at end may resume at the
// piece mark b (prompts.go): the first rune past b is one of the shared
// ones, and with NFC, text[b] and text[b+1] are ASCII, so normalizing
// the segment is normalizing its parts before and after b.
func (l *Local) resumable(text string, b, end int) bool {
	if b+utf8.UTFMax > end {
		return false
	}
	return !l.nfc || text[b] < utf8.RuneSelf && text[b+1] < utf8.RuneSelf
}

func (l *Local) norm(s string) string {
	if l.normalize == nil {
		return s
	}
	return l.normalize(s)
}

// Decode turns ids back into text (added tokens included, as HF's
// decode(ids, skip_special_tokens=False)). Byte sequences that are not valid
// UTF-8 are kept as is. It wraps [ErrInvalidToken] for an unknown id.
func (l *Local) Decode(ids []uint32) (string, error) {
	out := make([]byte, 0, len(ids)*4)
	for _, id := range ids {
		if s, ok := l.special.byID[id]; ok {
			if l.decodeMeta {
				s = strings.ReplaceAll(s, metaSpace, " ")
			}
			out = append(out, s...)
			continue
		}
		b, ok := l.core.tokenBytes(id)
		if !ok {
			return "", fmt.Errorf("%s: decode %d: %w", l.name, id, ErrInvalidToken)
		}
		out = append(out, b...)
	}
	for i := 0; i < l.decodeStrip && len(out) > 0 && out[0] == ' '; i++ {
		out = out[1:]
	}
	return string(out), nil
}

// TokenID returns the id of an added token (e.g. "<|im_end|>"), if any.
func (l *Local) TokenID(content string) (uint32, bool) {
	id, ok := l.special.byContent[content]
	return id, ok
}

// PromptCacheStats reports the prompt cache counters (zero when disabled).
func (l *Local) PromptCacheStats() PromptCacheStats {
	if l.prompts == nil {
		return PromptCacheStats{}
	}
	return l.prompts.stats()
}

// CacheStats reports the segment cache counters (zero when disabled).
func (l *Local) CacheStats() CacheStats {
	if l.cache == nil {
		return CacheStats{}
	}
	return l.cache.stats()
}
