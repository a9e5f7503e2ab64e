package tokenizer

import (
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// cpuRate starts measuring the calling goroutine's thread CPU time; the
// returned function reports n units of work per CPU-second as metric unit
// (nothing where thread CPU time is unavailable).
func cpuRate(b *testing.B) func(n float64, unit string) {
	runtime.LockOSThread()
	c0, ok := threadCPU()
	return func(n float64, unit string) {
		c1, _ := threadCPU()
		runtime.UnlockOSThread()
		if ok && c1 > c0 {
			b.ReportMetric(n/(c1-c0).Seconds(), unit)
		}
	}
}

// benchText builds a deterministic text of about n bytes from the long
// recipes in testdata/prompts.json-like pieces.
func benchText(kind string, n int) string {
	var pieces []string
	switch kind {
	case "english":
		pieces = []string{
			"The router keeps a prefix index of every worker's KV cache. ",
			"When request %d arrives, it hashes the prompt into blocks and looks up the longest cached prefix. ",
			"Workers publish events whenever blocks are stored or removed, so the index stays current.\n",
			"Load matters too: a worker with a long queue may lose to a colder but idle one. ",
			"\"Why not just round-robin?\" asked the operator; the answer is cache hits, latency, and cost.\n\n",
		}
	case "code":
		pieces = []string{
			"func handler%d(w http.ResponseWriter, r *http.Request) {\n",
			"\tctx := r.Context()\n\tids, err := tok.Encode(ctx, prompt)\n",
			"\tif err != nil {\n\t\thttp.Error(w, err.Error(), http.StatusBadRequest)\n\t\treturn\n\t}\n",
			"\t// route by overlap; ties broken by seeded rng\n\tdecision := router.Route(ids)\n}\n\n",
			"    def step_%d(self, batch):\n        return [x * 2 for x in batch if x %% 3 != 0]\n\n",
		}
	}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		p := pieces[i%len(pieces)]
		if strings.Contains(p, "%d") {
			p = fmt.Sprintf(p, i)
		} else {
			p = strings.ReplaceAll(p, "%%", "%")
		}
		b.WriteString(p)
	}
	return b.String()
}

// benchChat builds a conversation of turns messages totalling about n bytes.
func benchChat(kind string, n, turns int) []Message {
	text := benchText(kind, n)
	per := len(text) / turns
	msgs := []Message{{Role: "system", Content: "You are a helpful assistant."}}
	for i := 0; i < turns; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, Message{Role: role, Content: text[i*per : (i+1)*per]})
	}
	return msgs
}

func benchModels(b *testing.B) map[string]*Local {
	m := map[string]*Local{}
	for _, name := range []string{"qwen3", "llama3"} {
		m[name] = loadFixture(b, name)
	}
	d, err := Default(Options{})
	if err != nil {
		b.Fatal(err)
	}
	m[DefaultName] = d
	return m
}

// BenchmarkEncodeText: one long prompt without special tokens (nothing to
// cache across requests unless it repeats verbatim), cache off.
func BenchmarkEncodeText(b *testing.B) {
	models := benchModels(b)
	for _, name := range []string{"llama2", "gemma"} {
		models[name] = loadFixture(b, name)
	}
	for _, model := range []string{"qwen3", "llama3", DefaultName, "llama2", "gemma"} {
		for _, kind := range []string{"english", "code"} {
			text := benchText(kind, 72_000) // ~16k tokens
			l := models[model]
			nc := *l
			nc.cache, nc.prompts = nil, nil
			b.Run(fmt.Sprintf("model=%s/text=%s", model, kind), func(b *testing.B) { benchEncodeText(b, &nc, text) })
		}
	}
}

// benchEncodeText times l.EncodeText(text, false) and reports tokens per
// CPU-second and per second.
func benchEncodeText(b *testing.B, l *Local, text string) {
	benchEncodeTextReset(b, l, text, nil)
}

// benchEncodeTextReset is benchEncodeText calling reset (if not nil)
// before every timed encode.
func benchEncodeTextReset(b *testing.B, l *Local, text string, reset func()) {
	tokens := len(l.EncodeText(text, false))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	done := cpuRate(b)
	for range b.N {
		if reset != nil {
			reset()
		}
		l.EncodeText(text, false)
	}
	done(float64(tokens)*float64(b.N), "tokens/cpu-s")
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	b.ReportMetric(float64(tokens), "tokens/op")
}

// BenchmarkEncodeChat: a multi-turn conversation (~16k tokens) resent with
// one new user turn per request, as chat clients do; with and without the
// segment cache.
func BenchmarkEncodeChat(b *testing.B) {
	models := benchModels(b)
	for _, model := range []string{"qwen3", "llama3", DefaultName} {
		for _, kind := range []string{"english", "code"} {
			for _, cache := range []bool{false, true} {
				l := models[model]
				lc := *l
				lc.prompts = nil // BenchmarkEncodeExtended measures it
				if cache {
					lc.cache = newSegmentCache(DefaultCacheBytes)
				} else {
					lc.cache = nil
				}
				msgs := benchChat(kind, 72_000, 16)
				b.Run(fmt.Sprintf("model=%s/text=%s/cache=%v", model, kind, cache), func(b *testing.B) {
					text, err := lc.ApplyChatTemplate(msgs, true)
					if err != nil {
						b.Fatal(err)
					}
					tokens := len(lc.EncodeText(text, false))
					b.ReportAllocs()
					b.ResetTimer()
					done := cpuRate(b)
					var total int
					for i := range b.N {
						turn := append(msgs[:len(msgs):len(msgs)], Message{Role: "user", Content: fmt.Sprintf("Follow-up question number %d: and then what happened next?", i)})
						text, err := lc.ApplyChatTemplate(turn, true)
						if err != nil {
							b.Fatal(err)
						}
						total += len(lc.EncodeText(text, false))
					}
					done(float64(total), "tokens/cpu-s")
					b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "tokens/s")
					b.ReportMetric(float64(tokens), "tokens/op")
				})
			}
		}
	}
}

// realCorpusBytes is the size of each real corpus: what the sources
// present wherever Go is installed (the Go documentation and this
// repository's docs) hold in prose, so every machine encodes the same
// text for a given Go version and commit.
const realCorpusBytes = 512 << 10

// goRoot is the Go installation the go command reports ("" if none).
func goRoot() string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// htmlTag matches one HTML tag, stripped from the Go docs' HTML so that
// their prose is what gets encoded.
var htmlTag = regexp.MustCompile(`<[^>]*>`)

// realCorpus reads real text, up to n bytes, from files present wherever
// the benchmark can run, in a fixed order, and says where it came from:
// prose is the Go documentation under GOROOT/doc (specification, memory
// model, assembler guide, godebug; HTML tags stripped, entities decoded)
// then this repository's README.md and docs/**/*.md (Markdown as written);
// code is the Go standard library's net/http package (non-test files).
// It is read at benchmark time, not committed; "" when absent.
func realCorpus(kind string, n int) (text, from string) {
	root := goRoot()
	var files []string
	src := map[string]string{"prose": "GOROOT/doc, then the repository's docs", "code": "GOROOT/src/net/http"}[kind]
	glob := func(pats ...string) {
		for _, pat := range pats {
			m, _ := filepath.Glob(pat)
			sort.Strings(m)
			files = append(files, m...)
		}
	}
	switch kind {
	case "prose":
		if root != "" {
			glob(filepath.Join(root, "doc", "*.html"), filepath.Join(root, "doc", "*.md"))
		}
		glob(filepath.Join("..", "README.md"), filepath.Join("..", "docs", "*.md"), filepath.Join("..", "docs", "*", "*.md"))
	case "code":
		if root != "" {
			m, _ := filepath.Glob(filepath.Join(root, "src", "net", "http", "*.go"))
			sort.Strings(m)
			for _, f := range m {
				if !strings.HasSuffix(f, "_test.go") {
					files = append(files, f)
				}
			}
		}
	}
	var b strings.Builder
	used := 0
	for _, f := range files {
		if b.Len() >= n {
			break
		}
		data, err := os.ReadFile(f)
		if err != nil || !utf8.Valid(data) {
			continue
		}
		if strings.HasSuffix(f, ".html") {
			data = []byte(html.UnescapeString(htmlTag.ReplaceAllString(string(data), "")))
		}
		b.Write(data)
		used++
	}
	text = strings.ToValidUTF8(b.String()[:min(n, b.Len())], "")
	return text, fmt.Sprintf("%d bytes from %d of %d files (%s; GOROOT %q)", len(text), used, len(files), src, root)
}

// BenchmarkEncodeRealText: encoding of real prose and real Go code
// (realCorpus, 512 KB each) beside generated text of the same size
// (benchText's repeated sentences and snippets: text=generated-prose,
// text=generated-code), in one run, without the segment cache; ByteLevel
// BPE models beside SentencePiece-style ones on the same text, each with
// its word cache warm (the text was encoded once before timing), cold
// (words=cold: emptied before every encode, so only the text's own
// repetitions hit) and off (words=off). The generated text repeats a few
// pieces, so it flatters every cache and branch predictor; the real
// figures are the ones to quote. cache=on turns the segment cache on: the
// whole text is then one cached segment, so it measures a hit (a copy),
// not encoding.
func BenchmarkEncodeRealText(b *testing.B) {
	models := benchModels(b)
	for _, name := range []string{"llama2", "gemma", "gemma3"} {
		models[name] = loadFixture(b, name)
	}
	var variants []string
	for _, m := range []string{"qwen3", "llama3", DefaultName, "llama2", "gemma", "gemma3"} {
		variants = append(variants, m, m+"/words=cold", m+"/words=off")
	}
	variants = append(variants, "qwen3/cache=on", "llama3/cache=on", DefaultName+"/cache=on")
	for _, kind := range []string{"prose", "code"} {
		real, from := realCorpus(kind, realCorpusBytes)
		if len(real) < 64<<10 {
			b.Logf("no real %s corpus on this machine (%s)", kind, from)
			continue
		}
		b.Logf("%s: %s", kind, from)
		gen := map[string]string{"prose": "english", "code": "code"}[kind]
		for _, text := range []struct{ name, text string }{{kind, real}, {"generated-" + kind, benchText(gen, len(real))}} {
			for _, model := range variants {
				name, variant, _ := strings.Cut(model, "/")
				nc := *models[name]
				nc.cache, nc.prompts = nil, nil
				if variant == "cache=on" {
					nc.cache = newSegmentCache(DefaultCacheBytes)
				}
				words := &wordCache{} // warmed below, by the count
				var reset func()
				switch variant {
				case "words=off":
					words = nil
				case "words=cold":
					reset = func() { *words = wordCache{} }
				}
				switch c := nc.core.(type) {
				case *spmCore:
					cp := *c
					cp.words = words
					nc.core = &cp
				case *fastCore:
					cp := *c
					cp.words = words
					nc.core = &cp
				}
				b.Run(fmt.Sprintf("text=%s/model=%s", text.name, model), func(b *testing.B) { benchEncodeTextReset(b, &nc, text.text, reset) })
			}
		}
	}
}

// TestRealCorpus: the real corpora the benchmark encodes are there
// wherever Go and this repository are (the prose is the full 512 KB, so
// every machine encodes the same text), HTML tags are stripped, and the
// code is Go source.
func TestRealCorpus(t *testing.T) {
	prose, from := realCorpus("prose", realCorpusBytes)
	if len(prose) < realCorpusBytes-utf8.UTFMax || strings.Contains(prose, "<p>") || !strings.Contains(prose, "kvrouter") {
		t.Errorf("prose: %s; %d bytes, <p> %v, kvrouter %v", from, len(prose), strings.Contains(prose, "<p>"),
			strings.Contains(prose, "kvrouter"))
	}
	code, from := realCorpus("code", realCorpusBytes)
	if len(code) < realCorpusBytes-utf8.UTFMax || !strings.HasPrefix(code, "// Copyright") || !strings.Contains(code, "func ") {
		t.Errorf("code: %s; %d bytes, starts %q", from, len(code), code[:min(len(code), 40)])
	}
}

// BenchmarkEncodeExtended: a multi-turn chat of real text (~32k tokens,
// the rendered template) extended by one assistant reply and one user
// turn, as the next request of the conversation: encoded in full
// (prompts=off; segment cache off too) beside encoded with the prompt
// cache holding the previous request only (prompts=on: it resumes after
// the shared prefix). tokens/op is the new prompt's length.
func BenchmarkEncodeExtended(b *testing.B) {
	models := benchModels(b)
	prose, _ := realCorpus("prose", realCorpusBytes)
	code, _ := realCorpus("code", realCorpusBytes)
	if len(prose) < 256<<10 || len(code) < 64<<10 {
		b.Skip("no real corpus on this machine")
	}
	msgs := []Message{{Role: "system", Content: "You are a careful assistant."}}
	for i, at := 0, 0; at < 140_000; i++ {
		role, src := "user", prose
		if i%2 == 1 {
			role, src = "assistant", code
		}
		n := 4000
		msgs = append(msgs, Message{Role: role, Content: strings.ToValidUTF8(src[at:at+n], "")})
		at += n
	}
	if msgs[len(msgs)-1].Role == "assistant" {
		msgs = msgs[:len(msgs)-1]
	}
	next := append(msgs[:len(msgs):len(msgs)],
		Message{Role: "assistant", Content: strings.ToValidUTF8(code[200_000:201_500], "")},
		Message{Role: "user", Content: strings.ToValidUTF8(prose[300_000:300_600], "")})
	for _, model := range []string{"qwen3", "llama3", DefaultName} {
		l := *models[model]
		l.cache, l.prompts = nil, nil
		prev, err := l.ApplyChatTemplate(msgs, true)
		if err != nil {
			b.Fatal(err)
		}
		text, err := l.ApplyChatTemplate(next, true)
		if err != nil {
			b.Fatal(err)
		}
		warm := l
		warm.prompts = newPromptCache(DefaultPromptCacheEntries, DefaultPromptCacheBytes)
		warm.EncodeText(prev, false)
		entry := warm.prompts.recent[0]
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("model=%s/prompts=%s", model, map[bool]string{false: "off", true: "on"}[on]), func(b *testing.B) {
				lc := l
				tokens := len(lc.EncodeText(text, false))
				b.ReportAllocs()
				b.ResetTimer()
				done := cpuRate(b)
				for range b.N {
					if on { // the cache holds the previous request only
						lc.prompts = newPromptCache(DefaultPromptCacheEntries, DefaultPromptCacheBytes)
						lc.prompts.recent = []*promptEntry{entry}
					}
					lc.EncodeText(text, false)
				}
				done(float64(tokens)*float64(b.N), "tokens/cpu-s")
				b.ReportMetric(float64(tokens), "tokens/op")
			})
		}
	}
}
