package tokenizer

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/dlclark/regexp2"
)

// splitPatterns are the regexes with a hand-written pre-tokenizer.
var splitPatterns = map[string]string{"cl100k": cl100kPattern, "qwen": qwenPattern, "gpt2": gpt2Pattern}

// regexPieces splits s with the regex on the engine the tiktoken core uses.
func regexPieces(tb testing.TB, re *regexp2.Regexp, s string) []string {
	var out []string
	m, err := re.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func scanPieces(split splitter, s string) []string {
	s = validUTF8(s)
	var out []string
	for i := 0; i < len(s); {
		j := split(s, i)
		if j <= i || j > len(s) {
			panic("splitter made no progress")
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

type pretokChecker struct {
	re    map[string]*regexp2.Regexp
	split map[string]splitter
}

func newPretokChecker(tb testing.TB) *pretokChecker {
	c := &pretokChecker{re: map[string]*regexp2.Regexp{}, split: map[string]splitter{}}
	for name, p := range splitPatterns {
		c.re[name] = regexp2.MustCompile(p, regexp2.None)
		c.split[name] = splitterFor(p)
		if c.split[name] == nil {
			tb.Fatalf("%s: no splitter", name)
		}
	}
	return c
}

func (c *pretokChecker) check(t *testing.T, s string) {
	t.Helper()
	for name, re := range c.re {
		want := regexPieces(t, re, s)
		got := scanPieces(c.split[name], s)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %q:\n got %q\nwant %q", name, s, got, want)
		}
	}
}

// trickyPieces are the alphabet of generated texts: contractions in both
// cases, every whitespace kind (including non-ASCII \s and lone \r), letters
// of several categories and scripts, numbers beyond \d, combining marks
// (\p{M} is not \p{L}), emoji with ZWJ and skin tones, and invalid UTF-8.
var trickyPieces = []string{
	"'s", "'S", "'t", "'re", "'RE", "'rE", "'ve", "'m", "'ll", "'Ll", "'d", "'D", "'", "''", "'x", "'l", "'r",
	" ", "  ", "   ", "\t", "\n", "\r", "\r\n", "\n\n", " \n", "\v", "\f", "\u0085", "\u00a0", "\u3000", "\u2028", "\u200b",
	"a", "Z", "hello", "World", "é", "ß", "ǅ", "ʰ", "中文", "ひらがな", "Ωμέγα", "\u0301", "e\u0301", "\u200d",
	"1", "23", "4567", "٣", "½", "Ⅻ", "²", "𝟘",
	".", "!", "?", "...", "-", "\"", "(", ")", "{", "}", "#", "$", "/", "\\", "_", "\x7f", "\x00",
	"😀", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "\xff", "\xe2\x82", "\xed\xa0\x80",
}

func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(trickyPieces[rng.IntN(len(trickyPieces))])
	}
	return b.String()
}

// TestPretokenizeTable: hand-picked cases where the regex's backtracking
// matters, then seeded random texts, all equal to the regex.
func TestPretokenizeTable(t *testing.T) {
	c := newPretokChecker(t)
	for _, s := range []string{
		"", "a", " ", "  ", "\n", "hello world", "  hello", "   x", "\t\tx", " \t x", "x  ", "x \n", "x \n ", "x\n\n\ny",
		"  \n  x", "\r\n\r\n  \r\n", "a\r\n\tb", "\n \n", " \u3000x", "\u3000\u3000", "\u00a0x", "x\u0085y",
		"don't", "DON'T", "they're", "THEY'RE", "we'Ve", "I'm", "it'll", "'lL", "he'd", "'", "'''s", "'s'", " 's", "x'sy", "'\n",
		"1234567", "12 345", " 1", "a1b2", "٣٤٥٦", "½¾", "x½", " ½",
		"(hello)", "((x", " ((x", " !!\n\n", "!!\r\n\r\nx", " .\n ", "a.b", "$10.99", "e\u0301", "\u0301x", " \u0301\u0301x",
		"😀😀 😀", " 👍🏽x", "🇫🇷!", "\x7f", "a\x7fb", " \x7f\n", "\xff\xfe", "a\xffb", " \xff", "\xe2\x82x",
		"func f() {\n\treturn x\n}\n", "    def g(self):\n        pass\n\n\n",
	} {
		c.check(t, s)
	}
	rng := rand.New(rand.NewPCG(16, 3))
	for range 3000 {
		c.check(t, randomText(rng, 1+rng.IntN(24)))
	}
}

// TestPretokenizeClasses: the class table agrees with the regex engine's
// \s, \p{L} and \p{N} on every rune below U+3100 (where every \s is) and
// every 61st rune above (all of them take ~10 s).
func TestPretokenizeClasses(t *testing.T) {
	res := map[uint8]*regexp2.Regexp{
		clLetter: regexp2.MustCompile(`^\p{L}$`, regexp2.None),
		clNumber: regexp2.MustCompile(`^\p{N}$`, regexp2.None),
		clSpace:  regexp2.MustCompile(`^[^\S\r\n]$`, regexp2.None),
	}
	for r := rune(0); r <= unicode.MaxRune; r += classStep(r) {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		s := string(r)
		want := clOther
		if r == '\r' || r == '\n' {
			want = clNewline
		}
		for cl, re := range res {
			if ok, _ := re.MatchString(s); ok {
				want = cl
			}
		}
		if got, _ := classAt(s, 0); got != want {
			t.Fatalf("%U: class %d, regex says %d", r, got, want)
		}
	}
}

func classStep(r rune) rune {
	if r < 0x3100 {
		return 1
	}
	return 61
}

// FuzzPretokenize: on any text, and on texts built from trickyPieces by the
// fuzzer's bytes, each hand-written pre-tokenizer returns the regex's pieces.
func FuzzPretokenize(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Add("it's 42 <s>x hello!!\n\n  \u3000 'LL 😀👍🏽 ½ \xff")
	c := newPretokChecker(f)
	f.Fuzz(func(t *testing.T, s string) {
		c.check(t, s)
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			b.WriteString(trickyPieces[int(s[i])%len(trickyPieces)])
		}
		c.check(t, b.String())
	})
}

// TestFastCoreDifferential: the hand-written pre-tokenizer plus fastCore's
// BPE give the same ids as the regex-based tiktoken cores, on the synthetic
// GPT-2-pattern model, the HF fixtures (when fetched) and cl100k_base
// (against regexp2 v1, which agrees with HF's Oniguruma on the golden files).
func TestFastCoreDifferential(t *testing.T) {
	type pair struct{ fast, ref core }
	ref, err := newBPECore(cl100kRanks(), nil, cl100kPattern)
	if err != nil {
		t.Fatal(err)
	}
	pairs := map[string]pair{"cl100k": {fast: cl100kCore(), ref: ref}}
	synth := func(tj []byte) {
		fast, err := fromJSON(tj, nil, Options{}, false)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := fromJSON(tj, nil, Options{}, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fast.core.(*fastCore); !ok {
			t.Fatalf("synth: core %T, want the hand-written pre-tokenizer", fast.core)
		}
		pairs["synth"] = pair{fast: fast.core, ref: ref.core}
	}
	synth(synthJSON(t, nil))
	for _, model := range []string{"qwen3", "llama3"} {
		tj, err := os.ReadFile(filepath.Join(fixtureDir(), model, "tokenizer.json"))
		if err != nil {
			continue // fixtures not fetched; loadFixture-based tests report it
		}
		fast, err := fromJSON(tj, nil, Options{}, false)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := fromJSON(tj, nil, Options{}, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fast.core.(*fastCore); !ok {
			t.Fatalf("%s: core %T, want the hand-written pre-tokenizer", model, fast.core)
		}
		pairs[model] = pair{fast: fast.core, ref: ref.core}
	}
	rng := rand.New(rand.NewPCG(16, 4))
	texts := []string{benchText("english", 4000), benchText("code", 4000), strings.Repeat(" ", 300) + "x", strings.Repeat("ab", 200)}
	for _, kind := range []string{"prose", "code"} {
		// Twice: the second pass takes the word cache's hits.
		real, _ := realCorpus(kind, 64<<10)
		texts = append(texts, real, real)
	}
	for range 500 {
		texts = append(texts, randomText(rng, 1+rng.IntN(40)))
	}
	for name, p := range pairs {
		for _, s := range texts {
			got := p.fast.appendOrdinary(nil, s)
			want := p.ref.appendOrdinary(nil, s)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: %q: %s", name, s, firstDiff(got, want))
			}
		}
	}
}

// TestDefaultRegexSemantics: the built-in cl100k_base splits as the regex
// means (the codec's regexp2/v2 engine cut " \n \n" in two and dropped
// U+007F); " \n \n" is one cl100k token.
func TestDefaultRegexSemantics(t *testing.T) {
	d, err := Default(Options{CacheBytes: -1, PromptCacheEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.EncodeText(" \n \n", false); !slices.Equal(got, []uint32{33006}) {
		t.Errorf(`" \n \n" = %v, want [33006]`, got)
	}
	for _, s := range []string{"a\x7fb", "\x7f", "x \x7f\n"} {
		back, err := d.Decode(d.EncodeText(s, false))
		if err != nil || back != s {
			t.Errorf("%q round-trips to %q (%v)", s, back, err)
		}
	}
}

// TestMergeHeapEqualsScan: the heap merge of long pieces gives the
// reference scan's ids on runs that merge deeply (repeated letters,
// digits, spaces, mixed scripts), for cl100k and the synthetic model.
func TestMergeHeapEqualsScan(t *testing.T) {
	cores := map[string]*fastCore{"cl100k": cl100kCore()}
	l, err := fromJSON(synthJSON(t, nil), nil, Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	cores["synth"] = l.core.(*fastCore)
	rng := rand.New(rand.NewPCG(16, 5))
	alphabets := []string{"a", "ab", "hel", "lo", " ", "0123456789", "é中", "xyzzy", "=-", "\u00a0a"}
	for name, c := range cores {
		for range 300 {
			var b strings.Builder
			alpha := []rune(alphabets[rng.IntN(len(alphabets))])
			for n := 1 + rng.IntN(400); n > 0; n-- {
				b.WriteRune(alpha[rng.IntN(len(alpha))])
			}
			piece := b.String()
			want, _ := c.mergeScan(nil, piece, nil)
			if got := c.mergeHeap(nil, piece, nil); !slices.Equal(got, want) {
				t.Fatalf("%s: %q: %s", name, piece, firstDiff(got, want))
			}
		}
	}
}
