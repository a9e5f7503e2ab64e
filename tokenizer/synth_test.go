package tokenizer

import (
	"encoding/json"
	"testing"
)

// synthJSON builds a small ByteLevel BPE tokenizer.json: the 256 byte tokens
// (ids 0..255 in byte order), merges in id order, and the given extra parts.
// Merges (ids 256..261): he, ll, hell, " w", hello, " wo".
func synthJSON(tb testing.TB, mutate func(m map[string]any)) []byte {
	tb.Helper()
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	merges := [][2]string{{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"Ġ", "w"}, {"hell", "o"}, {"Ġw", "o"}}
	next := 256
	var ms []string
	for _, m := range merges {
		vocab[m[0]+m[1]] = next
		next++
		ms = append(ms, m[0]+" "+m[1])
	}
	doc := map[string]any{
		"version":    "1.0",
		"normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{300}, "tokens": []string{"<s>"}}}},
		"added_tokens": []any{
			map[string]any{"id": 300, "content": "<s>", "special": true},
			map[string]any{"id": 301, "content": "</s>", "special": true},
			map[string]any{"id": 302, "content": "<sep>", "special": true, "lstrip": true, "rstrip": true},
			map[string]any{"id": 303, "content": "<s>x", "special": false},
		},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": ms, "byte_fallback": false},
	}
	if mutate != nil {
		mutate(doc)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func synthTokenizer(tb testing.TB, opts Options) *Local {
	tb.Helper()
	cfg := []byte(`{"bos_token": "<s>", "eos_token": {"content": "</s>"}, "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"}`)
	l, err := FromJSON(synthJSON(tb, nil), cfg, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}
