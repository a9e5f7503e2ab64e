package mockerd

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/tokenizer"
)

type recorder struct {
	mu  sync.Mutex
	evs []kvevents.Event
}

func (r *recorder) Publish(_ context.Context, ev kvevents.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
	return nil
}

func (r *recorder) events() []kvevents.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

func newTestServer(t testing.TB) (*Server, *httptest.Server, *recorder) {
	t.Helper()
	return newTestServerWith(t, func(*Config) {})
}

// newTestServerWith is newTestServer with mod applied to the config.
func newTestServerWith(t testing.TB, mod func(*Config)) (*Server, *httptest.Server, *recorder) {
	t.Helper()
	tok, err := tokenizer.Default(tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	cfg := DefaultConfig()
	cfg.Tokenizer = tok
	cfg.Engine.NumBlocks, cfg.Engine.BlockSize, cfg.Engine.SpeedupRatio = 256, 16, 0
	cfg.Engine.Worker = kvevents.Worker{ID: 7}
	cfg.Sinks = []EventSink{rec}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	mod(&cfg)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s, hs, rec
}

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestCompletionUsageAndCache(t *testing.T) {
	_, hs, rec := newTestServer(t)
	prompt := "[" + strings.TrimSuffix(strings.Repeat("5,", 50), ",") + "]"
	var usages []oai.Usage
	for range 2 {
		resp, b := post(t, hs.URL+"/v1/completions", `{"prompt":`+prompt+`,"max_tokens":3}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		var c oai.Completion
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		if c.Object != "text_completion" || *c.Choices[0].FinishReason != "length" || strings.Count(c.Choices[0].Text, " ") != 3 {
			t.Fatalf("completion %s", b)
		}
		usages = append(usages, *c.Usage)
	}
	if u := usages[0]; u.PromptTokens != 50 || u.CompletionTokens != 3 || u.Cached() != 0 {
		t.Errorf("first usage %+v", u)
	}
	// 50 tokens = 3 full blocks of 16; all three are cached for the second.
	if u := usages[1]; u.Cached() != 48 {
		t.Errorf("second usage cached %d, want 48", u.Cached())
	}
	// The engine announces an empty cache at start (AllBlocksCleared, as
	// vLLM after a restart), then stores the prompt's blocks.
	evs := rec.events()
	if len(evs) < 2 || evs[0].Kind != kvevents.KindCleared || evs[0].WorkerID != 7 ||
		evs[1].Kind != kvevents.KindStored || evs[1].WorkerID != 7 || len(evs[1].Blocks) != 3 {
		t.Fatalf("events %v", evs)
	}
}

func TestChatStreamWithUsage(t *testing.T) {
	_, hs, _ := newTestServer(t)
	resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"kvrouter-mock","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	rd := oai.NewSSEReader(resp.Body, 0)
	var chunks []oai.ChatChunk
	done := false
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.IsDone() {
			done = true
			continue
		}
		var c oai.ChatChunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	if !done || len(chunks) != 5 {
		t.Fatalf("done %v, %d chunks", done, len(chunks))
	}
	if chunks[0].Choices[0].Delta.Role != "assistant" || chunks[3].Choices[0].FinishReason == nil {
		t.Errorf("chunks %+v", chunks)
	}
	last := chunks[4]
	if len(last.Choices) != 0 || last.Usage == nil || last.Usage.CompletionTokens != 4 || last.Usage.PromptTokens == 0 {
		t.Errorf("usage chunk %+v", last)
	}
}

func TestTokenizeLoadAndErrors(t *testing.T) {
	s, hs, _ := newTestServer(t)
	resp, b := post(t, hs.URL+"/tokenize", `{"prompt":"hello world"}`)
	var tr oai.TokenizeResponse
	if err := json.Unmarshal(b, &tr); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	want, _ := s.Config().Tokenizer.Encode(context.Background(), "hello world")
	if !slices.Equal(tr.Tokens, want) || tr.Count != len(want) || tr.MaxModelLen != 256*16 {
		t.Errorf("tokenize %+v, want %v", tr, want)
	}
	for body, code := range map[string]int{
		`{"model":"other","prompt":"x"}`:               404,
		`{"prompt":[1,2],"max_tokens":5000}`:           400,
		`{"prompt":"x","max_tokens":-1}`:               400,
		`{"messages":[{"role":"user","content":"x"}]}`: 400, // chat body on the completions endpoint
	} {
		if resp, b := post(t, hs.URL+"/v1/completions", body); resp.StatusCode != code {
			t.Errorf("%s: %d %s, want %d", body, resp.StatusCode, b, code)
		} else if _, ok := oai.ParseError(code, b); !ok {
			t.Errorf("%s: not an OpenAI error: %s", body, b)
		}
	}
	resp, err := http.Get(hs.URL + "/load")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l Load
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	if l.WorkerID != 7 || l.TotalBlocks != 256 || l.BlockSize != 16 {
		t.Errorf("load %+v", l)
	}
	mresp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	mb, _ := io.ReadAll(mresp.Body)
	for _, name := range []string{"vllm:kv_cache_usage_perc", "vllm:num_requests_running", "kvrouter_mocker_active_prefill_tokens"} {
		if !strings.Contains(string(mb), name) {
			t.Errorf("metrics lack %s", name)
		}
	}
}
