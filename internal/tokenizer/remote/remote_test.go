package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/tokenizer"
)

// fakeVLLM answers /tokenize like vLLM: completion prompts get a BOS (1)
// when add_special_tokens is true; chat requests get ids derived from the
// messages (one id per byte of content, 7 for the generation prompt).
func fakeVLLM(t *testing.T, calls *atomic.Int64) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/tokenize" || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad route", http.StatusNotFound)
			return
		}
		var req struct {
			Model               string              `json:"model"`
			Prompt              *string             `json:"prompt"`
			Messages            []tokenizer.Message `json:"messages"`
			AddGenerationPrompt *bool               `json:"add_generation_prompt"`
			AddSpecialTokens    *bool               `json:"add_special_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "m1" {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		var ids []uint32
		switch {
		case req.Prompt != nil:
			if req.AddSpecialTokens == nil || !*req.AddSpecialTokens {
				t.Errorf("completion request without add_special_tokens=true")
			}
			ids = append(ids, 1)
			for _, c := range []byte(*req.Prompt) {
				ids = append(ids, uint32(c))
			}
		case req.Messages != nil:
			if req.AddGenerationPrompt == nil || req.AddSpecialTokens == nil || *req.AddSpecialTokens {
				t.Errorf("chat request must carry add_generation_prompt and add_special_tokens=false")
			}
			for _, m := range req.Messages {
				for _, c := range []byte(m.Role + m.Content) {
					ids = append(ids, uint32(c))
				}
			}
			if *req.AddGenerationPrompt {
				ids = append(ids, 7)
			}
		default:
			http.Error(w, "no prompt", http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"count": len(ids), "max_model_len": 4096, "tokens": ids})
	}))
}

func TestRemote(t *testing.T) {
	var calls atomic.Int64
	srv := fakeVLLM(t, &calls)
	defer srv.Close()
	tok, err := New(Config{Endpoints: []string{srv.URL}, Model: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Name() != "remote:m1" {
		t.Errorf("name %q", tok.Name())
	}
	ctx := context.Background()
	ids, err := tok.Encode(ctx, "ab")
	if err != nil || !slices.Equal(ids, []uint32{1, 'a', 'b'}) {
		t.Errorf("Encode = %v, %v", ids, err)
	}
	ids, err = tok.EncodeChat(ctx, []tokenizer.Message{{Role: "u", Content: "x"}}, true)
	if err != nil || !slices.Equal(ids, []uint32{'u', 'x', 7}) {
		t.Errorf("EncodeChat = %v, %v", ids, err)
	}
	ids, err = tok.EncodeChat(ctx, []tokenizer.Message{{Role: "u", Content: "x"}}, false)
	if err != nil || !slices.Equal(ids, []uint32{'u', 'x'}) {
		t.Errorf("EncodeChat(no gen) = %v, %v", ids, err)
	}
}

func TestRemoteFailover(t *testing.T) {
	var calls, bad atomic.Int64
	good := fakeVLLM(t, &calls)
	defer good.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bad.Add(1)
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close() // connection refused

	tok, err := New(Config{Endpoints: []string{closedURL, down.URL, good.URL}, Model: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode(context.Background(), "a")
	if err != nil || !slices.Equal(ids, []uint32{1, 'a'}) {
		t.Fatalf("Encode = %v, %v", ids, err)
	}
	if bad.Load() != 1 || calls.Load() != 1 {
		t.Errorf("calls: down %d good %d", bad.Load(), calls.Load())
	}

	// A 4xx is final: the next endpoint is not asked.
	tok, _ = New(Config{Endpoints: []string{good.URL, good.URL}, Model: "other"})
	before := calls.Load()
	_, err = tok.Encode(context.Background(), "a")
	if !errors.Is(err, ErrStatus) || !strings.Contains(err.Error(), "400") || calls.Load() != before+1 {
		t.Errorf("4xx: err %v, calls %d", err, calls.Load()-before)
	}
}

func TestRemoteContextAndBadResponses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var calls atomic.Int64
	srv := fakeVLLM(t, &calls)
	defer srv.Close()
	tok, _ := New(Config{Endpoints: []string{srv.URL, srv.URL}, Model: "m1"})
	if _, err := tok.Encode(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	for body, want := range map[string]string{
		`{"count": 3, "tokens": [1]}`: "count",
		`{"count": 0}`:                "no tokens",
		`not json`:                    "decode",
	} {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
		tok, _ := New(Config{Endpoints: []string{s.URL}, Model: "m1"})
		if _, err := tok.Encode(context.Background(), "a"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", body, err, want)
		}
		s.Close()
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "no endpoints") || !strings.Contains(err.Error(), "no model") {
		t.Errorf("empty config: %v", err)
	}
	if _, err := New(Config{Endpoints: []string{"localhost:8000"}, Model: "m"}); err == nil {
		t.Error("non-URL endpoint accepted")
	}
}
