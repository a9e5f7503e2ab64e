package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// promptPair returns l with a fresh prompt cache (and the segment cache
// as configured) and its reference: the same model with neither cache.
func promptPair(l *Local, entries int, bytes int64) (withCache, ref *Local) {
	a, r := *l, *l
	a.prompts = newPromptCache(entries, bytes)
	r.cache, r.prompts = nil, nil
	return &a, &r
}

// promptModels are the models the prompt cache tests run on: the
// built-in cl100k, the synthetic GPT-2-pattern model and the fixtures
// present (ByteLevel ones resume inside segments; SentencePiece-style
// ones only after added tokens).
func promptModels(t *testing.T) map[string]*Local {
	t.Helper()
	models := map[string]*Local{"synth": synthTokenizer(t, Options{})}
	d, err := Default(Options{})
	if err != nil {
		t.Fatal(err)
	}
	models[DefaultName] = d
	for _, name := range []string{"qwen3", "llama3", "llama2", "gemma"} {
		if l := tryFixture(t, name); l != nil {
			models[name] = l
		}
	}
	return models
}

// realChat is a conversation of turns messages cut from the real corpora
// (prose and Go code alternating), each of 200 to 3000 bytes.
func realChat(rng *rand.Rand, turns int) []Message {
	prose, _ := realCorpus("prose", realCorpusBytes)
	code, _ := realCorpus("code", realCorpusBytes)
	msgs := []Message{{Role: "system", Content: "You are a careful assistant. Answer in English.\n\nRules:\n- be brief"}}
	for i := range turns {
		src := prose
		if i%3 == 2 {
			src = code
		}
		n := 200 + rng.IntN(2800)
		at := rng.IntN(len(src) - n)
		content := strings.ToValidUTF8(src[at:at+n], "")
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, Message{Role: role, Content: content})
	}
	return msgs
}

// TestPromptCacheChat: a multi-turn chat of real text, each request the
// whole conversation so far (with the generation prompt, as clients send
// it), encodes to the same ids with the prompt cache as without any cache,
// and resumes: after the first request, most ids come from the cache.
func TestPromptCacheChat(t *testing.T) {
	for name, l := range promptModels(t) {
		if l.ChatTemplate() == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			lc, ref := promptPair(l, 8, 8<<20)
			rng := rand.New(rand.NewPCG(7, uint64(len(name))))
			requests, final := 0, 0
			for conv := range 3 { // interleaved conversations
				msgs := realChat(rng, 12)
				if _, err := lc.ApplyChatTemplate(msgs[:2], true); err != nil {
					msgs = msgs[1:] // no system role (Gemma)
				}
				for turn := 2; turn <= len(msgs); turn++ {
					if msgs[turn-1].Role != "user" {
						continue // clients send a user turn last
					}
					text, err := lc.ApplyChatTemplate(msgs[:turn], true)
					if err != nil {
						t.Fatal(err)
					}
					got, want := lc.EncodeText(text, false), ref.EncodeText(text, false)
					if !slices.Equal(got, want) {
						t.Fatalf("conversation %d turn %d: %s", conv, turn, firstDiff(got, want))
					}
					requests++
					if turn >= len(msgs)-1 {
						final += len(want)
					}
				}
			}
			// Each conversation's text is encoded about once: its first
			// request in full, then each request its new turns only.
			st := lc.PromptCacheStats()
			if int(st.Hits) != requests-3 || st.EncodedTokens > uint64(final)*11/10 {
				t.Errorf("%d requests, %d tokens in the last ones; cache %+v", requests, final, st)
			}
		})
	}
}

// TestPromptCacheExtend: completion prompts that extend, cut back and
// edit earlier ones (at any byte, inside words, whitespace runs and
// multi-byte runes; with added tokens and post-processor tokens) encode
// as without any cache; the cache is bounded in entries and bytes.
func TestPromptCacheExtend(t *testing.T) {
	prose, _ := realCorpus("prose", 64<<10)
	code, _ := realCorpus("code", 64<<10)
	for name, l := range promptModels(t) {
		t.Run(name, func(t *testing.T) {
			lc, ref := promptPair(l, 4, 1<<20)
			rng := rand.New(rand.NewPCG(9, uint64(len(name))))
			specials := []string{"<|im_start|>", "<|im_end|>\n", "<s>", "</s>", "<sep>", " <|endoftext|> ", "<|eot_id|>"}
			base := prose[:8000] + code[:8000]
			texts := []string{base}
			for i := range 300 {
				prev := texts[rng.IntN(len(texts))]
				var b strings.Builder
				switch i % 4 {
				case 0: // extend
					b.WriteString(prev)
				case 1, 2: // cut back anywhere, then extend
					b.WriteString(prev[:rng.IntN(len(prev)+1)])
				case 3: // edit in the middle
					cut := rng.IntN(len(prev) + 1)
					b.WriteString(prev[:cut])
					b.WriteString(randomText(rng, 1+rng.IntN(5)))
					b.WriteString(prev[cut:])
				}
				for range rng.IntN(6) {
					switch rng.IntN(4) {
					case 0:
						b.WriteString(specials[rng.IntN(len(specials))])
					case 1:
						b.WriteString(randomText(rng, 1+rng.IntN(20)))
					default:
						src := []string{prose, code}[rng.IntN(2)]
						at := rng.IntN(len(src) - 600)
						b.WriteString(src[at : at+rng.IntN(600)])
					}
				}
				texts = append(texts, b.String())
			}
			for i, text := range texts {
				add := i%3 != 0
				got, want := lc.EncodeText(text, add), ref.EncodeText(text, add)
				if !slices.Equal(got, want) {
					t.Fatalf("text %d (%d bytes, valid UTF-8 %v): %s", i, len(text), utf8.ValidString(text), firstDiff(got, want))
				}
			}
			for _, e := range lc.prompts.recent { // resume points in text order
				if !slices.IsSortedFunc(e.marks, func(a, b pieceMark) int { return a.off - b.off }) ||
					!slices.IsSortedFunc(e.matches, func(a, b matchMark) int { return a.next - b.next }) {
					t.Errorf("entry of %d bytes: marks or matches out of order", len(e.text))
				}
			}
			st := lc.PromptCacheStats()
			if _, pieces := lc.core.(*fastCore); pieces && st.Hits < 50 || st.Entries > 4 || st.Bytes > 1<<20 {
				t.Errorf("stats %+v: want >= 50 hits within 4 entries and 1 MiB", st)
			}
		})
	}
}

// FuzzPromptCache: for any texts a and b, encoding a then a's prefix of
// any length followed by b gives the ids of an encoding without caches.
func FuzzPromptCache(f *testing.F) {
	f.Add(strings.Repeat("hello world ", 40), "  \n\n x", uint16(300))
	f.Add(strings.Repeat("a <|im_end|>\n<|im_start|>b  ", 30), "<|im_end|> 'll", uint16(500))
	f.Add(strings.Repeat("x\u00a0 \u3000y ", 60), "\u0085z", uint16(333))
	f.Add(strings.Repeat("cafe caf\u00e9 ab12 ", 30), "\u0301e\u0301 x", uint16(400))
	d, err := Default(Options{})
	if err != nil {
		f.Fatal(err)
	}
	models := []*Local{synthTokenizer(f, Options{MinCacheSegment: 1}), d}
	if q := tryFixture(f, "qwen3"); q != nil {
		models = append(models, q) // NFC normalizer
	}
	f.Fuzz(func(t *testing.T, a, b string, cut uint16) {
		for _, l := range models {
			lc, ref := promptPair(l, 4, 1<<20)
			lc.prompts.minReuse = 1
			text := a[:int(cut)%(len(a)+1)] + b
			lc.EncodeText(a, false)
			if got, want := lc.EncodeText(text, false), ref.EncodeText(text, false); !slices.Equal(got, want) {
				t.Fatalf("%s: %q then %q: %s", l.Name(), a, text, firstDiff(got, want))
			}
		}
	})
}

// TestPromptCacheBounds: entries beyond the limits are evicted least
// recent first, a prompt extending a cached one replaces it, and one over
// a quarter of the byte budget is not kept.
func TestPromptCacheBounds(t *testing.T) {
	d, err := Default(Options{PromptCacheEntries: 3, PromptCacheBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	text := func(i int) string {
		return fmt.Sprintf("conversation %d: %s", i, strings.Repeat("some words here ", 40))
	}
	for i := range 5 {
		d.EncodeText(text(i), false)
	}
	if st := d.PromptCacheStats(); st.Entries != 3 || st.Misses != 5 {
		t.Errorf("after 5 distinct prompts: %+v, want 3 entries, 5 misses", st)
	}
	d.EncodeText(text(4)+" and more words", false)
	if st := d.PromptCacheStats(); st.Entries != 3 || st.Hits != 1 {
		t.Errorf("after an extension: %+v, want 3 entries (replaced), 1 hit", st)
	}
	d.EncodeText(strings.Repeat("big ", 8<<10), false) // 32 KiB > budget/4
	if st := d.PromptCacheStats(); st.Entries != 3 || st.Bytes > 64<<10 {
		t.Errorf("after a huge prompt: %+v", st)
	}
	off, err := Default(Options{PromptCacheEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	off.EncodeText(text(1), false)
	if st := off.PromptCacheStats(); st != (PromptCacheStats{}) {
		t.Errorf("disabled cache counts %+v", st)
	}
}

// tryFixture is loadFixture, or nil when the fixture was not fetched
// (the tests that need it report that).
func tryFixture(t testing.TB, model string) *Local {
	if _, err := os.Stat(filepath.Join(fixtureDir(), model, "tokenizer.json")); err != nil {
		return nil
	}
	return loadFixture(t, model)
}

// TestPromptCacheConcurrent: goroutines extending their own and each
// other's prompts through one cache get the uncached ids (run with -race).
func TestPromptCacheConcurrent(t *testing.T) {
	d, err := Default(Options{PromptCacheEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, ref := promptPair(d, 1, 1)
	prose, _ := realCorpus("prose", 64<<10)
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			text := prose[:1000]
			for range 40 {
				at := rng.IntN(len(prose) - 300)
				text = text[:rng.IntN(len(text)+1)] + "<|im_end|>" + prose[at:at+rng.IntN(300)]
				if got, want := d.EncodeText(text, false), ref.EncodeText(text, false); !slices.Equal(got, want) {
					errs <- fmt.Sprintf("%q: %s", text, firstDiff(got, want))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if st := d.PromptCacheStats(); st.Hits == 0 || st.Entries > 4 {
		t.Errorf("stats %+v", st)
	}
}
