package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Load reads a HuggingFace tokenizer from path: either a tokenizer.json file
// or a model directory containing tokenizer.json. tokenizer_config.json next
// to it, when present, supplies the chat template and the bos/eos tokens.
// The name defaults to the directory's base name.
func Load(path string, opts Options) (*Local, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: load: %w", err)
	}
	dir, file := path, filepath.Join(path, "tokenizer.json")
	if !st.IsDir() {
		dir, file = filepath.Dir(path), path
	}
	tj, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: load: %w", err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tokenizer: load: %w", err)
	}
	if opts.Name == "" {
		abs, _ := filepath.Abs(dir)
		opts.Name = filepath.Base(abs)
	}
	l, err := FromJSON(tj, cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return l, nil
}

// hfFile is the subset of tokenizer.json this package reads.
type hfFile struct {
	AddedTokens []struct {
		ID         uint32 `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Special    bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         hfModel         `json:"model"`
}

// hfModel is tokenizer.json's model: BPE (vocab an object) or Unigram
// (vocab a list of [piece, score]).
type hfModel struct {
	Type                    string            `json:"type"`
	Dropout                 *float64          `json:"dropout"`
	UnkToken                *string           `json:"unk_token"`
	UnkID                   *int              `json:"unk_id"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	ByteFallback            bool              `json:"byte_fallback"`
	FuseUnk                 *bool             `json:"fuse_unk"`
	IgnoreMerges            bool              `json:"ignore_merges"`
	Vocab                   json.RawMessage   `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`
}

// hfConfig is the subset of tokenizer_config.json this package reads.
type hfConfig struct {
	ChatTemplate json.RawMessage `json:"chat_template"` // string or [{name, template}]
	BOS          json.RawMessage `json:"bos_token"`     // string, null or {content: ...}
	EOS          json.RawMessage `json:"eos_token"`
	UNK          json.RawMessage `json:"unk_token"`
	PAD          json.RawMessage `json:"pad_token"`
}

// FromJSON builds a tokenizer from the bytes of tokenizer.json and, optionally
// (nil), tokenizer_config.json. ByteLevel BPE and SentencePiece-style (BPE
// with byte fallback, Unigram) models are supported; others wrap
// [ErrUnsupported] with the reason.
func FromJSON(tokenizerJSON, configJSON []byte, opts Options) (*Local, error) {
	return fromJSON(tokenizerJSON, configJSON, opts, false)
}

// fromJSON is [FromJSON]; regexOnly keeps the regex pre-tokenizer even when
// a hand-written one exists (the reference in differential tests).
func fromJSON(tokenizerJSON, configJSON []byte, opts Options, regexOnly bool) (*Local, error) {
	var f hfFile
	if err := json.Unmarshal(tokenizerJSON, &f); err != nil {
		return nil, fmt.Errorf("tokenizer: parse tokenizer.json: %w", err)
	}
	m := &f.Model
	norm, err := parseNormalizer(f.Normalizer)
	if err != nil {
		return nil, err
	}
	added := make([]addedToken, 0, len(f.AddedTokens))
	addedIDs := make(map[string]uint32, len(f.AddedTokens))
	for _, a := range f.AddedTokens {
		added = append(added, addedToken{content: a.Content, id: a.ID, lstrip: a.LStrip, rstrip: a.RStrip, singleWord: a.SingleWord})
		addedIDs[a.Content] = a.ID
	}
	var (
		c           core
		vocab       map[string]uint32
		decodeStrip int
		decodeMeta  bool
	)
	if m.Type == "Unigram" || !isByteLevel(f.PreTokenizer) {
		sp, err := newSPMCore(&f, removesSpaces(f.Normalizer))
		if err != nil {
			return nil, err
		}
		d, _ := parseSPDecoder(f.Decoder)
		c, vocab, decodeStrip, decodeMeta = sp, sp.vocab, d.stripLeading, d.metaToSpace
	} else if c, vocab, err = byteLevelCore(m, f.PreTokenizer, addedIDs, regexOnly); err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = "hf"
	}
	l := newLocal(name, c, added, norm, opts)
	l.decodeStrip, l.decodeMeta = decodeStrip, decodeMeta
	l.nfc = typeOf(f.Normalizer) == "NFC"
	if l.prefix, l.suffix, err = parsePostProcessor(f.PostProcessor, addedIDs, vocab); err != nil {
		return nil, err
	}
	if len(configJSON) > 0 {
		if err := l.applyConfig(configJSON); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// byteLevelCore builds the tiktoken-style core of a ByteLevel BPE model.
func byteLevelCore(m *hfModel, preTokenizer json.RawMessage, addedIDs map[string]uint32, regexOnly bool) (core, map[string]uint32, error) {
	switch {
	case m.Type != "" && m.Type != "BPE":
		return nil, nil, fmt.Errorf("model type %s: %w", m.Type, ErrUnsupported)
	case m.ByteFallback:
		return nil, nil, fmt.Errorf("ByteLevel BPE with byte_fallback: %w", ErrUnsupported)
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, nil, fmt.Errorf("BPE dropout: %w", ErrUnsupported)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "",
		m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return nil, nil, fmt.Errorf("BPE with subword prefix/suffix: %w", ErrUnsupported)
	}
	var vocab map[string]uint32
	if err := json.Unmarshal(m.Vocab, &vocab); err != nil {
		return nil, nil, fmt.Errorf("tokenizer: BPE vocab: %w", err)
	}
	if len(vocab) == 0 {
		return nil, nil, fmt.Errorf("tokenizer: tokenizer.json has an empty vocab")
	}
	pattern, err := parsePreTokenizer(preTokenizer)
	if err != nil {
		return nil, nil, err
	}
	ranks, err := byteLevelRanks(vocab)
	if err != nil {
		return nil, nil, err
	}
	if err := checkMergeOrder(vocab, m.Merges); err != nil {
		return nil, nil, err
	}
	if split := splitterFor(pattern); split != nil && !regexOnly {
		return newFastCore(ranks, split), vocab, nil
	}
	c, err := newBPECore(ranks, addedIDs, pattern)
	if err != nil {
		return nil, nil, err
	}
	return c, vocab, nil
}

func (l *Local) applyConfig(configJSON []byte) error {
	var cfg hfConfig
	if err := json.Unmarshal(configJSON, &cfg); err != nil {
		return fmt.Errorf("tokenizer: parse tokenizer_config.json: %w", err)
	}
	src, err := pickTemplate(cfg.ChatTemplate)
	if err != nil || src == "" {
		return err
	}
	toks := SpecialTokens{BOS: tokenString(cfg.BOS), EOS: tokenString(cfg.EOS), UNK: tokenString(cfg.UNK), PAD: tokenString(cfg.PAD)}
	l.tmpl, err = NewChatTemplate(src, toks)
	if err != nil {
		return fmt.Errorf("tokenizer_config.json chat_template: %w", err)
	}
	return nil
}

// pickTemplate returns the template string; for the list form it picks the
// entry named "default" (as HF does when no name is requested).
func pickTemplate(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var named []struct{ Name, Template string }
	if err := json.Unmarshal(raw, &named); err != nil {
		return "", fmt.Errorf("tokenizer: chat_template is neither a string nor a list: %w", err)
	}
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, nil
		}
	}
	if len(named) > 0 {
		return named[0].Template, nil
	}
	return "", nil
}

// tokenString reads a special token that is a string, null or an AddedToken
// object ({"content": ...}).
func tokenString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct{ Content string }
	if json.Unmarshal(raw, &o) == nil {
		return o.Content
	}
	return ""
}

// typed is the common {"type": ...} header of tokenizer.json components.
type typed struct {
	Type string `json:"type"`
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func typeOf(raw json.RawMessage) string {
	var t typed
	_ = json.Unmarshal(raw, &t)
	return t.Type
}

// checkMergeOrder verifies the condition under which the tiktoken BPE
// algorithm (merge the adjacent pair whose concatenation has the lowest id)
// reproduces HF's merges-list BPE: every merge produces a vocab token, and
// merge priority never contradicts token id order.
func checkMergeOrder(vocab map[string]uint32, merges []json.RawMessage) error {
	var prev uint32
	for i, raw := range merges {
		a, b, err := mergePair(i, raw)
		if err != nil {
			return err
		}
		id, ok := vocab[a+b]
		if !ok {
			return fmt.Errorf("merge %d (%q %q) yields no vocab token: %w", i, a, b, ErrUnsupported)
		}
		if id < prev {
			return fmt.Errorf("merge priority does not follow token ids (merge %d %q %q -> id %d after id %d), so tiktoken-style BPE would differ: %w", i, a, b, id, prev, ErrUnsupported)
		}
		prev = id
	}
	return nil
}
