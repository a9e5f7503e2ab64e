package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSynthEncode(t *testing.T) {
	l := synthTokenizer(t, Options{})
	// Synthetic vocab: byte b has id b; merges give hello=260, " wo"=261.
	const hello, wo, sp = 260, 261, uint32(' ')
	tests := []struct {
		text string
		add  bool
		want []uint32
	}{
		{"hello", false, []uint32{hello}},
		{"hello", true, []uint32{300, hello}},
		{"hello wo", false, []uint32{hello, wo}},
		{"hello  wo", false, []uint32{hello, sp, wo}},
		{"<s>hello</s>", false, []uint32{300, hello, 301}},
		{"<s>xhello", false, []uint32{303, hello}},                // longest added token wins
		{"hello <sep> hello", false, []uint32{hello, 302, hello}}, // lstrip/rstrip absorb spaces
		{"<s", false, []uint32{'<', 's'}},
		{"", true, []uint32{300}},
	}
	for _, tc := range tests {
		if got := l.EncodeText(tc.text, tc.add); !slices.Equal(got, tc.want) {
			t.Errorf("EncodeText(%q, %v) = %v, want %v", tc.text, tc.add, got, tc.want)
		}
	}
	ids, err := l.Encode(context.Background(), "hello")
	if err != nil || !slices.Equal(ids, []uint32{300, hello}) {
		t.Errorf("Encode = %v, %v", ids, err)
	}
	s, err := l.Decode([]uint32{300, hello, wo, 301})
	if err != nil || s != "<s>hello wo</s>" {
		t.Errorf("Decode = %q, %v", s, err)
	}
	if _, err := l.Decode([]uint32{9999}); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("Decode(9999) err = %v", err)
	}
	if id, ok := l.TokenID("</s>"); !ok || id != 301 {
		t.Errorf("TokenID = %d %v", id, ok)
	}
}

func TestSynthChat(t *testing.T) {
	l := synthTokenizer(t, Options{})
	msgs := []Message{{Role: "user", Content: "hello"}}
	s, err := l.ApplyChatTemplate(msgs, true)
	if err != nil || s != "<s>user: hello</s>assistant:" {
		t.Fatalf("render = %q, %v", s, err)
	}
	ids, err := l.EncodeChat(context.Background(), msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := l.EncodeText(s, false); !slices.Equal(ids, want) || ids[0] != 300 {
		t.Errorf("EncodeChat = %v, want %v (no extra BOS)", ids, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.EncodeChat(ctx, msgs, true); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled ctx: %v", err)
	}
}

func TestUnsupported(t *testing.T) {
	cases := map[string]struct {
		mutate func(m map[string]any)
		reason string
	}{
		"unigram_bytelevel": {func(m map[string]any) { m["model"].(map[string]any)["type"] = "Unigram" }, "Sequence[Split ByteLevel]"},
		"byte_fallback":     {func(m map[string]any) { m["model"].(map[string]any)["byte_fallback"] = true }, "byte_fallback"},
		"metaspace_replacement": {func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "_"}
		}, "replacement"},
		"precompiled_normalizer": {func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "Precompiled", "precompiled_charsmap": ""}}}
		}, "Precompiled"},
		"replace_regex": {func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"Regex": " {2,}"}, "content": " "}
		}, "regex"},
		"merge_order": {func(m map[string]any) {
			mm := m["model"].(map[string]any)
			ms := mm["merges"].([]string)
			ms[0], ms[1] = ms[1], ms[0]
		}, "merge priority"},
		"roberta": {func(m map[string]any) { m["post_processor"] = map[string]any{"type": "RobertaProcessing"} }, "RobertaProcessing"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := FromJSON(synthJSON(t, tc.mutate), nil, Options{})
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), "remote") {
				t.Fatalf("err = %v, want ErrUnsupported naming %q and suggesting remote", err, tc.reason)
			}
		})
	}
	// SentencePiece-style files load (they returned ErrUnsupported before).
	t.Run("llama2_fixture", func(t *testing.T) {
		l := loadFixture(t, "llama2")
		if got, want := l.EncodeText("Hello world", true), []uint32{1, 22557, 1526}; !slices.Equal(got, want) {
			t.Fatalf("llama2 Hello world = %v, want %v", got, want)
		}
	})
	if _, err := FromJSON([]byte(`{`), nil, Options{}); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("bad JSON: %v", err)
	}
}

func TestChatTemplateErrors(t *testing.T) {
	if _, err := NewChatTemplate("{% for x in %}", SpecialTokens{}); !errors.Is(err, ErrTemplate) {
		t.Errorf("parse error: %v", err)
	}
	ct, err := NewChatTemplate("{% if messages[0].role != 'user' %}{{ raise_exception('first message must be from the user') }}{% endif %}ok", SpecialTokens{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ct.Render([]Message{{Role: "assistant", Content: "x"}}, false); !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), "first message must be from the user") {
		t.Errorf("raise_exception: %v", err)
	}
	if s, err := ct.Render([]Message{{Role: "user", Content: "x"}}, false); err != nil || s != "ok" {
		t.Errorf("render = %q, %v", s, err)
	}
	ct, err = NewChatTemplate(`{{ strftime_now("%d %b %Y") }}`, SpecialTokens{})
	if err != nil {
		t.Fatal(err)
	}
	ct.now = func() time.Time { return time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC) }
	if s, err := ct.Render(nil, false); err != nil || s != "26 Jul 2024" {
		t.Errorf("strftime_now = %q, %v", s, err)
	}
	l := synthTokenizer(t, Options{})
	l.tmpl = nil
	if _, err := l.EncodeChat(context.Background(), nil, true); !errors.Is(err, ErrNoChatTemplate) {
		t.Errorf("no template: %v", err)
	}
}

// TestTrimBlocks checks the HF environment options (trim_blocks,
// lstrip_blocks): block tags do not leave their newline/indentation behind.
func TestTrimBlocks(t *testing.T) {
	ct, err := NewChatTemplate("{% for m in messages %}\n    {% if m.role == 'user' %}\n[{{ m.content }}]\n    {% endif %}\n{% endfor %}", SpecialTokens{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := ct.Render([]Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, false)
	if err != nil || s != "[a]\n[b]\n" {
		t.Errorf("render = %q, %v", s, err)
	}
}

func TestDefault(t *testing.T) {
	d, err := Default(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Name() != DefaultName {
		t.Errorf("name %q", d.Name())
	}
	// cl100k_base reference ids (OpenAI tiktoken).
	if got := d.EncodeText("hello world", true); !slices.Equal(got, []uint32{15339, 1917}) {
		t.Errorf("hello world = %v", got)
	}
	ids, err := d.EncodeChat(context.Background(), []Message{{Role: "user", Content: "hi"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := d.Decode(ids)
	if s != "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" || ids[0] != 100264 || !slices.Contains(ids, 100265) {
		t.Errorf("chat ids %v decode to %q", ids, s)
	}
}

// TestCacheExact: with the segment cache, encoding equals uncached encoding
// on texts made of random pieces and special tokens, over many passes that
// mix hits, misses and evictions.
func TestCacheExact(t *testing.T) {
	models := map[string]*Local{}
	d, err := Default(Options{CacheBytes: 16 << 10, MinCacheSegment: 1})
	if err != nil {
		t.Fatal(err)
	}
	models["default"] = d
	models["synth"] = synthTokenizer(t, Options{CacheBytes: 16 << 10, MinCacheSegment: 1})
	if _, err := os.Stat(filepath.Join(fixtureDir(), "qwen3", "tokenizer.json")); err == nil {
		q := *loadFixture(t, "qwen3")
		q.cache, q.minCache = newSegmentCache(16<<10), 1
		models["qwen3"] = &q
	}
	pieces := []string{"hello", " world", "  ", "\n\n", "Café\u0301", "你好", "😀", "<|im_start|>", "<|im_end|>", "<s>", "</s>", "<sep>", "x", "123", "'s", "\t"}
	rng := rand.New(rand.NewPCG(1, 2))
	for name, l := range models {
		nc := *l
		nc.cache, nc.prompts = nil, nil
		for i := 0; i < 400; i++ {
			var b strings.Builder
			for j := rng.IntN(30); j >= 0; j-- {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			text := b.String()
			if got, want := l.EncodeText(text, true), nc.EncodeText(text, true); !slices.Equal(got, want) {
				t.Fatalf("%s: %q: cached %v != uncached %v", name, text, got, want)
			}
		}
		st := l.CacheStats()
		if st.Hits == 0 || st.Misses == 0 || st.Bytes > 16<<10 {
			t.Errorf("%s: cache stats %+v: want hits, misses and bytes within budget", name, st)
		}
	}
}

func TestConcurrent(t *testing.T) {
	l := synthTokenizer(t, Options{MinCacheSegment: 1})
	want := l.EncodeText("hello wo <s> hello", true)
	inParallel(t, 8, func(g int) error {
		for i := range 50 {
			if got := l.EncodeText("hello wo <s> hello", true); !slices.Equal(got, want) {
				return fmt.Errorf("g%d i%d: %v", g, i, got)
			}
			if _, err := l.ApplyChatTemplate([]Message{{Role: "user", Content: "hi"}}, true); err != nil {
				return err
			}
		}
		return nil
	})
}

// inParallel runs f(0..n-1) in n goroutines and reports their errors.
func inParallel(t *testing.T, n int, f func(g int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(g); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestByteLevelUseRegex: a lone ByteLevel(use_regex=true) pre-tokenizer uses
// GPT-2's split regex, so it encodes like the equivalent Split form.
func TestByteLevelUseRegex(t *testing.T) {
	split := synthTokenizer(t, Options{})
	l, err := FromJSON(synthJSON(t, func(m map[string]any) {
		m["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}
		m["post_processor"] = map[string]any{"type": "ByteLevel"}
	}), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hello wo  hello", "it's 42 <s>x hello!!\n\n"} {
		if got, want := l.EncodeText(s, true), split.EncodeText(s, false); !slices.Equal(got, want) {
			t.Errorf("%q: %v != %v", s, got, want)
		}
	}
	if _, err := l.ApplyChatTemplate(nil, true); !errors.Is(err, ErrNoChatTemplate) {
		t.Errorf("no config: %v", err)
	}
}
