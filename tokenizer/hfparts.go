package tokenizer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// gpt2Pattern is the pre-tokenizer regex of a ByteLevel pre-tokenizer with
// use_regex=true (GPT-2's).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func parseNormalizer(raw json.RawMessage) (func(string) string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("tokenizer: normalizer: %w", err)
	}
	switch n.Type {
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Sequence":
		var fs []func(string) string
		for _, sub := range n.Normalizers {
			f, err := parseNormalizer(sub)
			if err != nil {
				return nil, err
			}
			if f != nil {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			return nil, nil
		}
		return func(s string) string {
			for _, f := range fs {
				s = f(s)
			}
			return s
		}, nil
	case "Prepend":
		var p struct {
			Prepend string `json:"prepend"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("tokenizer: Prepend normalizer: %w", err)
		}
		// As HF: an empty string stays empty.
		return func(s string) string {
			if s == "" {
				return s
			}
			return p.Prepend + s
		}, nil
	case "Replace":
		from, to, err := parseReplace(raw)
		if err != nil {
			return nil, err
		}
		return func(s string) string { return strings.ReplaceAll(s, from, to) }, nil
	default:
		return nil, fmt.Errorf("normalizer %s: %w", n.Type, ErrUnsupported)
	}
}

// parseReplace reads a Replace normalizer with a string pattern (a regex
// pattern is unsupported).
func parseReplace(raw json.RawMessage) (from, to string, err error) {
	var r struct {
		Pattern struct {
			String *string `json:"String"`
			Regex  *string `json:"Regex"`
		} `json:"pattern"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", "", fmt.Errorf("tokenizer: Replace normalizer: %w", err)
	}
	if r.Pattern.String == nil || *r.Pattern.String == "" {
		return "", "", fmt.Errorf("Replace normalizer with a regex or empty pattern: %w", ErrUnsupported)
	}
	return *r.Pattern.String, r.Content, nil
}

// removesSpaces reports whether the normalizer's last step replaces every
// " " with text that has none (Gemma's Replace " " -> "▁").
func removesSpaces(raw json.RawMessage) bool {
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if isNull(raw) || json.Unmarshal(raw, &n) != nil {
		return false
	}
	switch n.Type {
	case "Sequence":
		return len(n.Normalizers) > 0 && removesSpaces(n.Normalizers[len(n.Normalizers)-1])
	case "Replace":
		from, to, err := parseReplace(raw)
		return err == nil && from == " " && !strings.Contains(to, " ")
	}
	return false
}

// parsePreTokenizer returns the split regex of a ByteLevel pre-tokenizer:
// either ByteLevel(use_regex=true) alone or Sequence[Split(regex,
// Isolated), ByteLevel(use_regex=false)].
func parsePreTokenizer(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", fmt.Errorf("no pre_tokenizer (not a ByteLevel BPE model): %w", ErrUnsupported)
	}
	type byteLevel struct {
		AddPrefixSpace bool  `json:"add_prefix_space"`
		UseRegex       *bool `json:"use_regex"`
	}
	switch t := typeOf(raw); t {
	case "ByteLevel":
		var bl byteLevel
		_ = json.Unmarshal(raw, &bl)
		if bl.AddPrefixSpace {
			return "", fmt.Errorf("ByteLevel pre-tokenizer with add_prefix_space: %w", ErrUnsupported)
		}
		if bl.UseRegex != nil && !*bl.UseRegex {
			return "", fmt.Errorf("ByteLevel pre-tokenizer without a split regex: %w", ErrUnsupported)
		}
		return gpt2Pattern, nil
	case "Sequence":
		var seq struct {
			Pretokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return "", fmt.Errorf("tokenizer: pre_tokenizer: %w", err)
		}
		var types []string
		for _, p := range seq.Pretokenizers {
			types = append(types, typeOf(p))
		}
		if len(types) != 2 || types[0] != "Split" || types[1] != "ByteLevel" {
			if strings.Contains(strings.Join(types, ","), "Metaspace") {
				return "", fmt.Errorf("pre-tokenizer Metaspace (SentencePiece model): %w", ErrUnsupported)
			}
			return "", fmt.Errorf("pre-tokenizer Sequence%v (only [Split ByteLevel] is supported): %w", types, ErrUnsupported)
		}
		var bl byteLevel
		_ = json.Unmarshal(seq.Pretokenizers[1], &bl)
		if bl.AddPrefixSpace || (bl.UseRegex != nil && *bl.UseRegex) {
			return "", fmt.Errorf("ByteLevel after Split with add_prefix_space or use_regex: %w", ErrUnsupported)
		}
		var sp struct {
			Pattern struct {
				Regex  *string `json:"Regex"`
				String *string `json:"String"`
			} `json:"pattern"`
			Behavior string `json:"behavior"`
			Invert   bool   `json:"invert"`
		}
		if err := json.Unmarshal(seq.Pretokenizers[0], &sp); err != nil {
			return "", fmt.Errorf("tokenizer: Split pre-tokenizer: %w", err)
		}
		// The tiktoken core keeps regex matches as pieces (findall). That is
		// Removed+invert (matches kept, gaps dropped) exactly, and Isolated
		// (matches and gaps kept) for patterns that match every character,
		// as the ByteLevel patterns in use do (their last branch is \s+).
		if !(sp.Behavior == "Isolated" && !sp.Invert) && !(sp.Behavior == "Removed" && sp.Invert) {
			return "", fmt.Errorf("split behavior %s invert=%v (only Isolated, or Removed inverted): %w", sp.Behavior, sp.Invert, ErrUnsupported)
		}
		switch {
		case sp.Pattern.Regex != nil:
			return *sp.Pattern.Regex, nil
		case sp.Pattern.String != nil:
			return regexp.QuoteMeta(*sp.Pattern.String), nil
		}
		return "", fmt.Errorf("tokenizer: Split pre-tokenizer has no pattern")
	case "Metaspace":
		return "", fmt.Errorf("pre-tokenizer Metaspace (SentencePiece model): %w", ErrUnsupported)
	default:
		return "", fmt.Errorf("pre-tokenizer %s: %w", t, ErrUnsupported)
	}
}

// parsePostProcessor returns the ids that add_special_tokens=True puts
// around a single sequence.
func parsePostProcessor(raw json.RawMessage, added, vocab map[string]uint32) (prefix, suffix []uint32, err error) {
	if isNull(raw) {
		return nil, nil, nil
	}
	switch t := typeOf(raw); t {
	case "ByteLevel":
		return nil, nil, nil
	case "Sequence":
		var seq struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return nil, nil, fmt.Errorf("tokenizer: post_processor: %w", err)
		}
		for _, p := range seq.Processors {
			pre, suf, err := parsePostProcessor(p, added, vocab)
			if err != nil {
				return nil, nil, err
			}
			prefix = append(prefix, pre...)
			suffix = append(suf, suffix...)
		}
		return prefix, suffix, nil
	case "TemplateProcessing":
		var tp struct {
			Single []struct {
				SpecialToken *struct {
					ID string `json:"id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID string `json:"id"`
				} `json:"Sequence"`
			} `json:"single"`
			SpecialTokens map[string]struct {
				IDs []uint32 `json:"ids"`
			} `json:"special_tokens"`
		}
		if err := json.Unmarshal(raw, &tp); err != nil {
			return nil, nil, fmt.Errorf("tokenizer: TemplateProcessing: %w", err)
		}
		seen := false
		for _, piece := range tp.Single {
			switch {
			case piece.Sequence != nil:
				seen = true
			case piece.SpecialToken != nil:
				st, ok := tp.SpecialTokens[piece.SpecialToken.ID]
				ids := st.IDs
				if !ok || len(ids) == 0 {
					id, ok2 := added[piece.SpecialToken.ID]
					if !ok2 {
						id, ok2 = vocab[piece.SpecialToken.ID]
					}
					if !ok2 {
						return nil, nil, fmt.Errorf("tokenizer: TemplateProcessing token %q not found", piece.SpecialToken.ID)
					}
					ids = []uint32{id}
				}
				if seen {
					suffix = append(suffix, ids...)
				} else {
					prefix = append(prefix, ids...)
				}
			}
		}
		return prefix, suffix, nil
	default:
		return nil, nil, fmt.Errorf("post-processor %s: %w", t, ErrUnsupported)
	}
}

// byteToRune is GPT-2's bytes_to_unicode table: printable Latin-1 bytes map
// to themselves, the other 68 bytes to U+0100 onwards, in byte order.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = next
			next++
		}
		b2r[b] = r
		r2b[r] = byte(b)
	}
	return b2r, r2b
}()

// byteLevelRanks converts a ByteLevel vocab (keys in the bytes_to_unicode
// alphabet) into raw-byte ranks, rank = token id.
func byteLevelRanks(vocab map[string]uint32) (map[string]int, error) {
	ranks := make(map[string]int, len(vocab))
	buf := make([]byte, 0, 64)
	for s, id := range vocab {
		if int64(id) >= int64(len(vocab))+1<<20 { // ids index a dense table
			return nil, fmt.Errorf("tokenizer: vocab id %d of %q is far beyond the vocab size %d", id, s, len(vocab))
		}
		buf = buf[:0]
		for _, r := range s {
			b, ok := runeToByte[r]
			if !ok {
				return nil, fmt.Errorf("vocab token %q is not in the ByteLevel alphabet (not a ByteLevel BPE model): %w", s, ErrUnsupported)
			}
			buf = append(buf, b)
		}
		ranks[string(buf)] = int(id)
	}
	for b := 0; b < 256; b++ {
		if _, ok := ranks[string([]byte{byte(b)})]; !ok {
			return nil, fmt.Errorf("vocab lacks byte %#x (not a complete ByteLevel vocab): %w", b, ErrUnsupported)
		}
	}
	return ranks, nil
}
