package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
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
			nc.cache = nil
			b.Run(fmt.Sprintf("model=%s/text=%s", model, kind), func(b *testing.B) { benchEncodeText(b, &nc, text) })
		}
	}
}

// benchEncodeText times l.EncodeText(text, false) and reports tokens per
// CPU-second and per second.
func benchEncodeText(b *testing.B, l *Local, text string) {
	tokens := len(l.EncodeText(text, false))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	done := cpuRate(b)
	for range b.N {
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

// realCorpus reads real prose (the Go specification, memory model and
// assembler docs, the licence texts Debian ships) or real code (the Go
// standard library's net/http, non-test files), up to n bytes, in a fixed
// order. It is read at benchmark time, not committed; "" when absent.
func realCorpus(kind string, n int) string {
	var files []string
	switch kind {
	case "prose":
		for _, pat := range []string{"/usr/local/go/doc/*.html", "/usr/local/go/doc/*.md", "/usr/share/common-licenses/*"} {
			m, _ := filepath.Glob(pat)
			files = append(files, m...)
		}
	case "code":
		m, _ := filepath.Glob(filepath.Join(runtime.GOROOT(), "src", "net", "http", "*.go"))
		for _, f := range m {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || !st.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil || !utf8.Valid(data) {
			continue
		}
		b.Write(data)
		if b.Len() >= n {
			return b.String()[:n]
		}
	}
	return b.String()
}

// BenchmarkEncodeRealText: encoding of about 1 MB of real prose and of
// real Go code without the segment cache, ByteLevel BPE models beside
// SentencePiece-style ones on the same text; the latter with their word
// cache (warm: the text was encoded once before timing) and without it
// (words=off).
func BenchmarkEncodeRealText(b *testing.B) {
	models := benchModels(b)
	for _, name := range []string{"llama2", "gemma", "gemma3"} {
		models[name] = loadFixture(b, name)
	}
	for _, kind := range []string{"prose", "code"} {
		text := realCorpus(kind, 1<<20)
		if len(text) < 64<<10 {
			b.Logf("no real %s corpus on this machine", kind)
			continue
		}
		text = strings.ToValidUTF8(text, "")
		for _, model := range []string{"qwen3", "llama3", DefaultName, "llama2", "gemma", "gemma3", "llama2/words=off", "gemma/words=off"} {
			name, noWords := strings.CutSuffix(model, "/words=off")
			nc := *models[name]
			nc.cache = nil
			if sp, ok := nc.core.(*spmCore); ok {
				cp := *sp
				cp.words = &wordCache{} // warmed below, by the count
				if noWords {
					cp.words = nil
				}
				nc.core = &cp
			}
			b.Run(fmt.Sprintf("text=%s/model=%s", kind, model), func(b *testing.B) { benchEncodeText(b, &nc, text) })
		}
	}
}
