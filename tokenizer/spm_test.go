package tokenizer

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// naiveBPE is the obviously-correct reference for spmCore's BPE: the whole
// text is one word (no cutting at "▁"), each character is its vocab token,
// else its <0xXX> bytes, else unk (fused), and then, while any adjacent
// pair has a merge, the lowest-ranked, leftmost one is applied.
func naiveBPE(c *spmCore, text string) []uint32 {
	var syms []uint32
	unk := false
	for _, r := range text {
		ch := string(r)
		if id, ok := c.vocab[ch]; ok {
			if unk {
				syms, unk = append(syms, uint32(c.unk)), false
			}
			syms = append(syms, id)
			continue
		}
		var bytes []uint32
		for i := 0; i < len(ch); i++ {
			if id, ok := c.vocab[fmt.Sprintf("<0x%02X>", ch[i])]; ok {
				bytes = append(bytes, id)
			}
		}
		if c.byteFallback && len(bytes) == len(ch) {
			syms = append(syms, bytes...)
			continue
		}
		if c.unk >= 0 {
			if unk && !c.fuseUnk {
				syms = append(syms, uint32(c.unk))
			}
			unk = true
		}
	}
	if unk {
		syms = append(syms, uint32(c.unk))
	}
	for {
		best, at := uint32(math.MaxUint32), -1
		for i := 0; i+1 < len(syms); i++ {
			if m, ok := c.merges.get(pairKey(syms[i], syms[i+1])); ok && m.rank < best {
				best, at = m.rank, i
			}
		}
		if at < 0 {
			return syms
		}
		m, _ := c.merges.get(pairKey(syms[at], syms[at+1]))
		syms = slices.Replace(syms, at, at+2, m.id)
	}
}

var spmFuzzSeeds = []string{
	"Hello world", " leading", "  two  spaces  ", "a▁b ▁▁c ▁ d▁", "x" + strings.Repeat(" ", 200) + "y",
	"你好，世界！" + strings.Repeat("人工智能", 40), "𠮷野家 🫠🪿 ꙮ \x00\x7f", "func main() {\n\tfmt.Println(\"hi\")\n}\n",
	"<table><tr><td>x</td></tr></table>", "\n\n\n\t\t  \n", strings.Repeat("ab", 150), "\xff\xfe invalid",
}

// FuzzSPMDifferential: the real Mistral ("llama2") and Gemma vocabularies
// encode any text exactly as naiveBPE does, which checks the word cutting
// at "▁", the scan and heap merges and byte fallback at once.
func FuzzSPMDifferential(f *testing.F) {
	for _, s := range spmFuzzSeeds {
		f.Add(s)
	}
	var models []*Local
	for _, name := range []string{"llama2", "gemma"} {
		models = append(models, loadFixture(f, name))
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 600 {
			text = text[:600] // the reference is cubic
		}
		for _, l := range models {
			c := l.core.(*spmCore)
			norm := validUTF8(l.norm(text))
			got := c.appendOrdinary(nil, norm)
			if want := naiveBPE(c, norm); !slices.Equal(got, want) {
				t.Fatalf("%s %q: %s", l.Name(), text, firstDiff(got, want))
			}
		}
	})
}

// unigramFixture loads the Mistral BPE tokenizer.json in dir turned into a
// Unigram model over the same pieces, as testdata/gen/gen.mjs derives it
// for the reference (deriveUnigram): scores -(1 + id/64)/8, Metaspace
// without split.
func unigramFixture(dir string) (*Local, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	var bpe struct {
		AddedTokens   json.RawMessage                `json:"added_tokens"`
		PostProcessor json.RawMessage                `json:"post_processor"`
		Model         struct{ Vocab map[string]int } `json:"model"`
	}
	if err := json.Unmarshal(raw, &bpe); err != nil {
		return nil, err
	}
	vocab := make([][2]any, len(bpe.Model.Vocab))
	for piece, id := range bpe.Model.Vocab {
		vocab[id] = [2]any{piece, -float64(1+id/64) / 8}
	}
	meta := map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": false}
	tj, err := json.Marshal(map[string]any{
		"added_tokens":   bpe.AddedTokens,
		"normalizer":     nil,
		"pre_tokenizer":  meta,
		"post_processor": bpe.PostProcessor,
		"decoder":        meta,
		"model":          map[string]any{"type": "Unigram", "unk_id": 0, "byte_fallback": false, "vocab": vocab},
	})
	if err != nil {
		return nil, err
	}
	return FromJSON(tj, nil, Options{Name: "unigram"})
}

// synthUnigramJSON builds a Unigram tokenizer.json over a small alphabet:
// random pieces of 1-4 runes with random scores (many ties), unk at id 0,
// a Metaspace pre-tokenizer.
func synthUnigramJSON(tb testing.TB, seed uint64) []byte {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	alphabet := []rune("ab▁cé你")
	vocab := [][2]any{{"<unk>", 0.0}}
	seen := map[string]bool{"<unk>": true}
	for len(vocab) < 40 {
		n := 1 + rng.IntN(4)
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[rng.IntN(len(alphabet)-1)]) // never 你: unk
		}
		if p := b.String(); !seen[p] {
			seen[p] = true
			// Multiples of 1/8: path sums are exact, so the order of the
			// additions cannot break a tie.
			vocab = append(vocab, [2]any{p, -float64(1+rng.IntN(80)) / 8})
		}
	}
	doc := map[string]any{
		"normalizer":    nil,
		"pre_tokenizer": map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
		"model":         map[string]any{"type": "Unigram", "unk_id": 0, "vocab": vocab},
		"decoder":       map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// naiveUnigram is the reference lattice Viterbi of HF's Unigram, built
// literally: a node per vocab piece at each start (and an unk node where no
// single-character piece starts), then for every node in start order the
// best node ending where it begins (the first one on ties), unks fused.
func naiveUnigram(c *spmCore, word string) []uint32 {
	type lnode struct {
		id          int32
		start, end  int
		score, back float64
		prev        *lnode
	}
	begins := map[int][]*lnode{}
	ends := map[int][]*lnode{0: {{id: -1}}} // BOS
	var starts []int
	for i := 0; i < len(word); {
		starts = append(starts, i)
		_, rl := utf8.DecodeRuneInString(word[i:])
		single := false
		for j := i + 1; j <= len(word); j++ {
			if id, ok := c.vocab[word[i:j]]; ok && utf8.ValidString(word[i:j]) {
				n := &lnode{id: int32(id), start: i, end: j, score: c.uni.scores[id]}
				begins[i], ends[j] = append(begins[i], n), append(ends[j], n)
				single = single || j == i+rl
			}
		}
		if !single {
			n := &lnode{id: c.unk, start: i, end: i + rl, score: c.uni.unkScore}
			begins[i], ends[i+rl] = append(begins[i], n), append(ends[i+rl], n)
		}
		i += rl
	}
	eos := &lnode{start: len(word)}
	begins[len(word)] = append(begins[len(word)], eos)
	for _, pos := range append(starts, len(word)) {
		for _, r := range begins[pos] {
			var best *lnode
			for _, l := range ends[pos] {
				if best == nil || l.back+r.score > best.back+r.score {
					best = l
				}
			}
			r.prev, r.back = best, best.back+r.score
		}
	}
	var rev []int32
	for n := eos.prev; n != nil && n.id != -1; n = n.prev {
		rev = append(rev, n.id)
	}
	var out []uint32
	for k := len(rev) - 1; k >= 0; k-- {
		if rev[k] == c.unk && k+1 < len(rev) && rev[k+1] == c.unk {
			continue
		}
		out = append(out, uint32(rev[k]))
	}
	return out
}

// FuzzUnigramDifferential: the Unigram Viterbi equals the literal lattice
// on random vocabularies, word by word as the Metaspace pre-tokenizer cuts.
func FuzzUnigramDifferential(f *testing.F) {
	f.Add(uint64(1), "ab cé")
	f.Add(uint64(2), "▁▁aab你你b  c")
	f.Add(uint64(3), "ééé abcabc 你a")
	f.Fuzz(func(t *testing.T, seed uint64, text string) {
		l, err := FromJSON(synthUnigramJSON(t, seed), nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := l.core.(*spmCore)
		if utf8.RuneCountInString(text) > 200 {
			text = string([]rune(text)[:200])
		}
		text = validUTF8(text)
		got := l.EncodeText(text, false)
		// Metaspace: spaces -> "▁", "▁" prepended, cut before each "▁".
		w := "▁" + strings.ReplaceAll(text, " ", "▁")
		if strings.HasPrefix(text, "▁") || strings.HasPrefix(text, " ") {
			w = strings.ReplaceAll(text, " ", "▁")
		}
		var want []uint32
		for start, i := 0, 1; i <= len(w); i++ {
			if i == len(w) || strings.HasPrefix(w[i:], "▁") {
				want = append(want, naiveUnigram(c, w[start:i])...)
				start = i
			}
		}
		if text == "" {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d %q: %s", seed, text, firstDiff(got, want))
		}
	})
}

// TestAddedTokenNonASCII: an added token that starts with a non-ASCII
// character is found among tokens with several first bytes (the matcher
// used strings.IndexAny on a set of bytes, which never matched one).
func TestAddedTokenNonASCII(t *testing.T) {
	m := newMatcher([]addedToken{{content: "<a>", id: 1}, {content: "▁▁", id: 2}, {content: "\n\n", id: 3}})
	got, ok := m.find("x▁▁y", 0)
	if !ok || got.id != 2 || got.segEnd != 1 || got.next != 1+len("▁▁") {
		t.Fatalf("find = %+v %v, want ▁▁ (id 2) at 1", got, ok)
	}
}

// TestRewriteInlineIf: conditional expressions in parentheses (Gemma 3's
// template), which gonja cannot parse, render as Jinja does.
func TestRewriteInlineIf(t *testing.T) {
	cases := []struct{ src, want string }{
		{`{{ 'a' + ('b' if true else 'c') }}`, "ab"},
		{`{{ ('b' if false else 'c') }}`, "c"},
		{`{{ ((1 if false else 2) if true else 3) }}`, "2"},
		{`{{ "(x if y else z)" }}`, "(x if y else z)"},
		{`{{ 'a' + ('b') }}{{ 'x' if false else 'y' }}`, "aby"},
		{`{% for m in messages %}{{ '<' + (m.role if loop.first else "-") + '>' }}{% endfor %}`, "<user><->"},
		{`{% if (messages | length) > 1 %}many{% endif %}`, "many"},
	}
	msgs := []Message{{Role: "user", Content: "x"}, {Role: "assistant", Content: "y"}}
	for _, c := range cases {
		ct, err := NewChatTemplate(c.src, SpecialTokens{})
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := ct.Render(msgs, false)
		if err != nil || got != c.want {
			t.Errorf("%s = %q, %v; want %q", c.src, got, err, c.want)
		}
	}
}

// TestSPMStopsOnCancel: a huge one-word prompt (no "▁" to cut at) stops
// costing CPU once the stop check fires.
func TestSPMStopsOnCancel(t *testing.T) {
	l := loadFixture(t, "gemma")
	c := l.core.(*spmCore)
	text := strings.Repeat("人工智能", 50_000)
	calls := 0
	ids := c.appendOrdinaryStop(nil, text, func() bool { calls++; return calls > 2 })
	full := c.appendOrdinary(nil, text)
	if calls != 3 || slices.Equal(ids, full) {
		t.Fatalf("stop not honoured: %d calls, %d ids of %d", calls, len(ids), len(full))
	}
}

// TestSPMConcurrentWordCache: goroutines sharing a model (and its word
// cache, whose slots they overwrite) get the ids a fresh model gives.
func TestSPMConcurrentWordCache(t *testing.T) {
	l := loadFixture(t, "llama2")
	texts := make([]string, 8)
	for g := range texts {
		texts[g] = strings.Repeat(fmt.Sprintf("word%d другой 字%d\n\tx := y%d ", g, g, g), 40)
	}
	fresh := *l.core.(*spmCore)
	fresh.words = nil // no cache: the reference
	want := make([][]uint32, len(texts))
	for g, s := range texts {
		want[g] = fresh.appendOrdinary(nil, l.norm(s))
	}
	inParallel(t, len(texts), func(g int) error {
		for i := range 20 {
			k := (g + i) % len(texts)
			if got := l.core.appendOrdinary(nil, l.norm(texts[k])); !slices.Equal(got, want[k]) {
				return fmt.Errorf("g%d i%d: %s", g, i, firstDiff(got, want[k]))
			}
		}
		return nil
	})
}

// TestMetaspacePrependFirst: prepend_scheme "first" adds "▁" only to the
// segment at the start of the text (HF: original offset 0), "always" to
// every segment; a segment cached after a later position must not leak
// into the first one (that segment bypasses the cache).
func TestMetaspacePrependFirst(t *testing.T) {
	mk := func(scheme string) *Local {
		doc := map[string]any{
			"added_tokens":  []any{map[string]any{"id": 1, "content": "<s>", "special": true}},
			"pre_tokenizer": map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": true},
			"model": map[string]any{"type": "BPE", "unk_token": "<unk>",
				"vocab":  map[string]int{"<unk>": 0, "<s>": 1, "▁": 2, "h": 3, "i": 4, "▁h": 5, "hi": 6, "▁hi": 7},
				"merges": []string{"▁ h", "h i", "▁h i"}},
		}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		l, err := FromJSON(b, nil, Options{MinCacheSegment: 1})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	cases := []struct {
		scheme, text string
		want         []uint32
	}{
		{"first", "<s>hi", []uint32{1, 6}}, // not at offset 0: "hi" -> hi
		{"first", "hi", []uint32{7}},       // "▁hi"
		{"first", "hi<s>hi", []uint32{7, 1, 6}},
		{"first", "hi hi", []uint32{7, 7}}, // "▁hi▁hi", split before each "▁"
		{"always", "<s>hi", []uint32{1, 7}},
		{"never", "hi", []uint32{6}},
	}
	for _, scheme := range []string{"first", "always", "never"} {
		l := mk(scheme)
		for pass := range 2 { // the second pass meets cached segments
			for _, c := range cases {
				if c.scheme != scheme {
					continue
				}
				if got := l.EncodeText(c.text, false); !slices.Equal(got, c.want) {
					t.Errorf("%s %q pass %d: got %v, want %v", scheme, c.text, pass, got, c.want)
				}
			}
		}
	}
}

// jsonMergePair is mergePair by encoding/json alone (the reference for its
// hand-cut fast path).
func jsonMergePair(raw []byte) (a, b string, ok bool) {
	var pair []string
	if json.Unmarshal(raw, &pair) == nil && len(pair) == 2 {
		return pair[0], pair[1], true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", "", false
	}
	if a, b, ok = strings.Cut(s, " "); !ok {
		return "", "", false
	}
	return a, b, true
}

// FuzzMergePair: a merges entry reads the same by the fast path as by
// encoding/json, escapes, spacing and invalid UTF-8 included.
func FuzzMergePair(f *testing.F) {
	for _, s := range []string{`"a b"`, ` "a b c" `, `["a","b"]`, `[ "a" , "b c" ]`, `["a\"","b"]`, `"a\u0020b"`,
		`["a","b","c"]`, `"ab"`, `[1,2]`, `["é","▁"]`, "\"\xff b\"", `["a"]`, `""`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // entries come from a parsed file
		}
		a, b, err := mergePair(0, raw)
		ra, rb, ok := jsonMergePair(raw)
		if (err == nil) != ok || (ok && (a != ra || b != rb)) {
			t.Fatalf("%q: got %q %q %v, want %q %q %v", raw, a, b, err, ra, rb, ok)
		}
	})
}
