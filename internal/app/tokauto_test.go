package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/tokenizer"
)

// qwenFixture is the Qwen3 tokenizer fixture directory (tokenizer.json and
// tokenizer_config.json), skipping the test when it is missing outside CI.
func qwenFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", ".cache", "tokenizers", "qwen3")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("tokenizer fixture %s missing under CI: %v", dir, err)
		}
		t.Skipf("tokenizer fixture %s missing; run scripts/fetch-tokenizers to enable this test", dir)
	}
	return dir
}

// writeHFSnapshot writes the fixture's tokenizer files into dir.
func writeHFSnapshot(t *testing.T, fixture, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(fixture, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// emptyHF points every Hugging Face cache variable at an empty directory
// and returns it.
func emptyHF(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "")
	return home
}

func encodeWith(t *testing.T, tok tokenizer.Tokenizer, text string) []uint32 {
	t.Helper()
	ids, err := tok.Encode(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestAutoTokenizerHFCache: --tokenizer auto (the default) finds the
// model's tokenizer.json in the Hugging Face cache under $HF_HOME/hub,
// the snapshot refs/main names (not a newer broken one), or without
// refs/main the newest snapshot with a tokenizer.json; it is the model's
// own (ids may be forwarded). Old code: serve's default was the built-in
// cl100k_base for every model.
func TestAutoTokenizerHFCache(t *testing.T) {
	fixture := qwenFixture(t)
	home := emptyHF(t)
	repo := filepath.Join(home, "hub", "models--Qwen--Qwen3-8B")
	writeHFSnapshot(t, fixture, filepath.Join(repo, "snapshots", "abc123"))
	broken := filepath.Join(repo, "snapshots", "zzz999")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "tokenizer.json"), []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("abc123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := tokenizer.Load(fixture, tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const text = "Hello world, 東京!"
	if def := DefaultServeConfig().Tokenizer; def != TokenizerAuto {
		t.Fatalf("serve's default tokenizer %q, want auto", def)
	}
	for _, spec := range []string{TokenizerAuto, ""} {
		got, err := ResolveTokenizer(spec, "Qwen/Qwen3-8B", nil)
		if err != nil {
			t.Fatalf("%q: %v", spec, err)
		}
		if got.Source != filepath.Join(repo, "snapshots", "abc123") || !got.Own {
			t.Errorf("%q: source %q own %v, want the refs/main snapshot, own", spec, got.Source, got.Own)
		}
		if g, w := encodeWith(t, got, text), encodeWith(t, want, text); !slices.Equal(g, w) {
			t.Errorf("%q: ids %v, want Qwen3's %v", spec, g, w)
		}
	}

	// Without refs/main: the newest snapshot that has a tokenizer.json
	// (a newer one without it does not count).
	if err := os.Remove(filepath.Join(repo, "refs", "main")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(broken); err != nil {
		t.Fatal(err)
	}
	writeHFSnapshot(t, fixture, filepath.Join(repo, "snapshots", "def456"))
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(repo, "snapshots", "abc123"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "snapshots", "newest-no-tokenizer"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := ResolveTokenizer(TokenizerAuto, "Qwen/Qwen3-8B", nil)
	if err != nil || got.Source != filepath.Join(repo, "snapshots", "def456") {
		t.Errorf("no refs/main: source %q (%v), want the newest snapshot def456", got.Source, err)
	}

	// HF_HUB_CACHE wins over HF_HOME.
	hub := t.TempDir()
	t.Setenv("HF_HUB_CACHE", hub)
	writeHFSnapshot(t, fixture, filepath.Join(hub, "models--Qwen--Qwen3-8B", "snapshots", "r1"))
	if got, err := ResolveTokenizer(TokenizerAuto, "Qwen/Qwen3-8B", nil); err != nil || got.Source != filepath.Join(hub, "models--Qwen--Qwen3-8B", "snapshots", "r1") {
		t.Errorf("HF_HUB_CACHE: source %q (%v)", got.Source, err)
	}
}

// TestAutoTokenizerModelDir: a --model that is a local model directory
// gives its tokenizer.json; an explicit path is the model's own too; the
// mock model gets the built-in tokenizer as its own; an explicit builtin
// for another model routes only.
func TestAutoTokenizerModelDir(t *testing.T) {
	fixture := qwenFixture(t)
	emptyHF(t)
	dir := filepath.Join(t.TempDir(), "Qwen3-8B")
	writeHFSnapshot(t, fixture, dir)
	got, err := ResolveTokenizer(TokenizerAuto, dir, []string{"http://127.0.0.1:1"})
	if err != nil || got.Source != dir || !got.Own {
		t.Fatalf("model dir: source %q own %v (%v), want %s, own", got.Source, got.Own, err, dir)
	}
	if got, err := ResolveTokenizer(filepath.Join(dir, "tokenizer.json"), "Qwen/Qwen3-8B", nil); err != nil || !got.Own {
		t.Errorf("explicit path: own %v (%v)", got.Own, err)
	}
	for _, tc := range []struct {
		spec, model string
		own         bool
	}{
		{TokenizerAuto, DefaultModel, true},
		{TokenizerBuiltin, DefaultModel, true},
		{TokenizerBuiltin, "Qwen/Qwen3-8B", false},
	} {
		got, err := ResolveTokenizer(tc.spec, tc.model, nil)
		if err != nil || got.Source != TokenizerBuiltin || got.Name() != tokenizer.DefaultName || got.Own != tc.own {
			t.Errorf("%s for %s: source %q name %q own %v (%v), want builtin, own %v", tc.spec, tc.model, got.Source, got.Name(), got.Own, err, tc.own)
		}
	}
}

// TestAutoTokenizerRefuses: no tokenizer.json anywhere and no worker to
// ask: serve refuses to start with one message naming where it looked
// and the three flags to pass; with a worker, auto asks its /tokenize
// (routing only). Old code: started with cl100k_base.
func TestAutoTokenizerRefuses(t *testing.T) {
	home := emptyHF(t)
	_, err := ResolveTokenizer(TokenizerAuto, "Qwen/Qwen3-8B", nil)
	if err == nil {
		t.Fatal("resolved a tokenizer from nothing")
	}
	for _, want := range []string{`"Qwen/Qwen3-8B"`, filepath.Join(home, "hub", "models--Qwen--Qwen3-8B", "snapshots"),
		"--tokenizer PATH", "--tokenizer remote --tokenizer-url", "--tokenizer builtin"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	cfg := DefaultServeConfig()
	cfg.Listen, cfg.Frontend.Model = "127.0.0.1:0", "Qwen/Qwen3-8B"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := NewServe(cfg); err == nil || !strings.Contains(err.Error(), "--tokenizer builtin") {
		t.Errorf("NewServe: %v, want the refusal", err)
	}

	got, err := ResolveTokenizer(TokenizerAuto, "Qwen/Qwen3-8B", []string{"http://127.0.0.1:1"})
	if err != nil || got.Source != TokenizerRemote || got.Own || got.Name() != "remote:Qwen/Qwen3-8B" {
		t.Errorf("with a worker: source %q own %v name %q (%v), want remote, not own", got.Source, got.Own, got.Name(), err)
	}
}

// qwenStub is a vLLM-like engine for a model the built-in tokenizer does
// not serve: /tokenize answers one id per byte (not cl100k), /metrics and
// /health answer, and completions are recorded.
type qwenStub struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newQwenStub(t *testing.T) *qwenStub {
	st := &qwenStub{}
	st.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			return
		case "/metrics":
			_, _ = io.WriteString(w, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\"} 0\n")
			return
		case "/tokenize":
			var req struct {
				Prompt string `json:"prompt"`
			}
			_ = json.NewDecoder(r.Body).Decode(&req)
			ids := []uint32{151643}
			for _, c := range []byte(req.Prompt) {
				ids = append(ids, uint32(c))
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"count": len(ids), "tokens": ids})
			return
		}
		if r.Method != http.MethodPost {
			// The pool's GET /v1/models poll (LoRA adapters) is no
			// completion: recording its empty body raced the test's
			// read of the last forwarded prompt.
			_, _ = io.WriteString(w, `{"object":"list","data":[]}`)
			return
		}
		b, _ := io.ReadAll(r.Body)
		st.mu.Lock()
		st.bodies = append(st.bodies, b)
		st.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"text":"ok"}]}`)
	}))
	t.Cleanup(st.Close)
	return st
}

func (st *qwenStub) last() []byte {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.bodies) == 0 {
		return nil
	}
	return st.bodies[len(st.bodies)-1]
}

// TestQwenWithoutTokenizerForwardsText: the issue's example, `serve
// --no-nats --model Qwen/Qwen3-8B --block-size 16 --worker URL,id=1`
// without --tokenizer, with an empty Hugging Face cache: the worker gets
// the client's text prompt. Old code forwarded the built-in cl100k ids
// ("prompt":[9906,1917,...]) to the Qwen engine.
func TestQwenWithoutTokenizerForwardsText(t *testing.T) {
	emptyHF(t)
	st := newQwenStub(t)
	cfg := DefaultServeConfig()
	cfg.NoNATS = true
	cfg.Frontend.Model = "Qwen/Qwen3-8B"
	cfg.Frontend.Router.BlockSize = 16
	cfg.Workers = []string{st.URL + ",id=1"}
	cfg.Frontend.LoadPollInterval = 10 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = ln
	s, err := NewServe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("serve stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve not ready after 30s")
	}
	const prompt = "Hello world, this is a text completion for a Qwen engine."
	body, _ := json.Marshal(map[string]any{"model": "Qwen/Qwen3-8B", "prompt": prompt, "max_tokens": 1})
	resp, err := http.Post(s.URL()+"/v1/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("completion: %d", resp.StatusCode)
	}
	var fwd struct {
		Prompt any `json:"prompt"`
	}
	if err := json.Unmarshal(st.last(), &fwd); err != nil || fwd.Prompt != prompt {
		t.Errorf("worker got %s (%v), want the client's text prompt", st.last(), err)
	}
}
