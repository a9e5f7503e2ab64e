package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// simTokenize asks the simulator's POST /tokenize for text's ids.
func simTokenize(t *testing.T, s *Sim, text string) []uint32 {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": s.Model, "prompt": text, "add_special_tokens": true})
	resp, err := httpClient.Post(s.URL()+"/tokenize", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r struct {
		Count  int      `json:"count"`
		Tokens []uint32 `json:"tokens"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || resp.StatusCode != http.StatusOK || r.Count != len(r.Tokens) {
		t.Fatalf("sim /tokenize: %d %s (%v)", resp.StatusCode, raw, err)
	}
	return r.Tokens
}

// waitSelfTest waits until r's /debug/index shows worker id's tokenizer
// self-test with outcome want, and returns it.
func waitSelfTest(t *testing.T, r *Router, id uint64, want string) frontend.SelfTest {
	t.Helper()
	var got frontend.SelfTest
	WaitFor(t, 30*time.Second, fmt.Sprintf("%s: worker %d's tokenizer self-test %s", r.Name, id, want), func() (bool, string) {
		_, body, err := r.Get("/debug/index")
		if err != nil {
			return false, err.Error()
		}
		var rep frontend.IndexReport
		if err := json.Unmarshal([]byte(body), &rep); err != nil {
			return false, err.Error()
		}
		for _, w := range rep.Workers {
			if w.Worker == id && w.Tokenizer != nil {
				got = *w.Tokenizer
				return got.Outcome == want, fmt.Sprintf("%+v", got)
			}
		}
		return false, "no such worker"
	})
	return got
}

// TestSimTokenizerSelfTest: llm-d-inference-sim (SimVersion) serves
// vLLM's /tokenize for prompts and chat messages. A router with the
// built-in tokenizer (the mock model's own) finds that the simulator's
// (dummy) tokenizer differs, so the simulator gets the client's text and
// counts the prompt itself; old code sent it the cl100k ids and it
// counted those. A router with --tokenizer remote (the simulator's
// /tokenize) matches on all three canaries.
func TestSimTokenizerSelfTest(t *testing.T) {
	skipShort(t)
	bin := SimBinary(t, root)
	s := StartSim(t, bin, 1, SimConfig{})
	s.WaitHealthy(t, 30*time.Second)
	r := StartStaticRouter(t, bins.Kvrouter, "router-builtin", "--block-size", "16", "--tokenizer", "builtin",
		"--load-poll", "50ms", "--worker", s.WorkerFlag(16))
	r.WaitReady(t, 30*time.Second)
	res := waitSelfTest(t, r, 1, frontend.SelfTestMismatch)
	if res.ForwardIDs || res.Mismatch == nil {
		t.Errorf("builtin vs the simulator: %+v, want a located mismatch forwarding no ids", res)
	}

	const text = "Internationalization notwithstanding, tokenizers disagree about subwords."
	cl, err := tokenizer.Default(tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := cl.Encode(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	simIDs := simTokenize(t, s, text)
	if len(simIDs) == len(ids) {
		t.Fatalf("the prompt has %d tokens in both tokenizers; pick one where they differ", len(ids))
	}
	if a := askSim(t, r, "completions", false, text); a.Prompt != len(simIDs) {
		t.Errorf("the simulator counted %d prompt tokens, want its own %d (cl100k's ids: %d)", a.Prompt, len(simIDs), len(ids))
	}

	r2 := StartStaticRouter(t, bins.Kvrouter, "router-remote", "--block-size", "16", "--tokenizer", "remote",
		"--load-poll", "50ms", "--worker", s.WorkerFlag(16))
	r2.WaitReady(t, 30*time.Second)
	if res := waitSelfTest(t, r2, 1, frontend.SelfTestMatch); res.Canaries != 3 || res.ForwardIDs {
		t.Errorf("remote vs the simulator: %+v, want 3 canaries matched, no ids forwarded (remote routes only)", res)
	}
}
