package tokenizer

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = []string{"", "hello world", "<s>x</s>", "  <sep>  ", "Café\u0301 你好 😀\r\n\t", "\xff\xfe<|im_start|>", "'s'S'll 123456", "<|im_end|><|im_start|>"}

// FuzzEncode: encoding arbitrary text never panics, cached equals uncached,
// and valid UTF-8 round-trips through Decode (no normalizer in these models).
func FuzzEncode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	synth := synthTokenizer(f, Options{MinCacheSegment: 1})
	def, err := Default(Options{MinCacheSegment: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, l := range []*Local{synth, def} {
			nc := *l
			nc.cache, nc.prompts = nil, nil
			ids := l.EncodeText(text, false)
			if again := nc.EncodeText(text, false); !slices.Equal(ids, again) {
				t.Fatalf("%s: cached %v != uncached %v", l.Name(), ids, again)
			}
			// NB: <sep> strips the whitespace around it (lstrip/rstrip), so
			// such texts do not round-trip by design.
			if !utf8.ValidString(text) || (l == synth && strings.Contains(text, "<sep>")) {
				continue
			}
			back, err := l.Decode(ids)
			if err != nil || back != text {
				t.Fatalf("%s: %q -> %v -> %q (%v)", l.Name(), text, ids, back, err)
			}
		}
	})
}

// FuzzFromJSON: arbitrary tokenizer.json bytes never panic the loader.
func FuzzFromJSON(f *testing.F) {
	f.Add(synthJSON(f, nil), []byte(`{"chat_template": "{{ messages }}"}`))
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0}}}`), []byte(`{"chat_template": "{% if %}"}`))
	f.Add([]byte(`{"pre_tokenizer": {"type": "ByteLevel"}, "model": {"vocab": {"a": 4294967295}}}`), []byte(nil))
	f.Add(synthUnigramJSON(f, 1), []byte(nil))
	f.Add([]byte(`{"normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
		"model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "vocab": {"<unk>": 0, "<0x41>": 1, "▁": 2, "h": 3, "▁h": 4}, "merges": ["▁ h"]},
		"decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Strip", "content": " ", "start": 1}]}}`), []byte(nil))
	f.Fuzz(func(t *testing.T, tj, cfg []byte) {
		l, err := FromJSON(tj, cfg, Options{})
		if err != nil {
			return
		}
		_ = l.EncodeText("hello <s> world", true)
		_, _ = l.ApplyChatTemplate([]Message{{Role: "user", Content: "hi"}}, true)
	})
}
