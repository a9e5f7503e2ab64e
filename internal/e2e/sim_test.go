package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The external-engine tests run llm-d-inference-sim (SimVersion), a vLLM
// simulator kvrouter did not write, behind `kvrouter serve` with the
// bind topology (the simulators connect their ZMQ PUB to the router's
// --zmq-bind) and --tokenizer remote. They skip without the binary (run
// scripts/setup-test-deps) and fail without it under CI=true.

// simAnswer is one answered request through the router.
type simAnswer struct {
	Worker  uint64
	Overlap int // X-Kvrouter-Overlap-Blocks
	Prompt  int // the engine's usage.prompt_tokens
	Cached  int // the engine's usage.prompt_tokens_details.cached_tokens; -1 = no usage
	Object  string
	Text    string
}

// simUsage is the usage object of an engine answer.
type simUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	Details      *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// askSim sends one completion ("completions") or chat ("chat") for doc
// through r, streamed (with include_usage) or not, and reads the answer.
func askSim(t *testing.T, r *Router, endpoint string, stream bool, doc string) simAnswer {
	t.Helper()
	return askSimModel(t, r, Model, endpoint, stream, doc)
}

// askSimModel is askSim for another model name (a LoRA adapter).
func askSimModel(t *testing.T, r *Router, model, endpoint string, stream bool, doc string) simAnswer {
	t.Helper()
	req := map[string]any{"model": model, "max_tokens": 4}
	path := "/v1/completions"
	if endpoint == "chat" {
		path = "/v1/chat/completions"
		req["messages"] = []map[string]any{{"role": "user", "content": doc}}
	} else {
		req["prompt"] = doc
	}
	if stream {
		req["stream"] = true
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.URL()+path, bytes.NewReader(body))
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(hreq)
	if err != nil {
		t.Fatalf("%s stream=%v: %v", endpoint, stream, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s stream=%v: %d %v %s", endpoint, stream, resp.StatusCode, err, raw)
	}
	a := simAnswer{Cached: -1}
	a.Worker, _ = strconv.ParseUint(resp.Header.Get(HeaderWorker), 10, 64)
	a.Overlap, _ = strconv.Atoi(resp.Header.Get(HeaderOverlap))
	type answer struct {
		Object  string    `json:"object"`
		Usage   *simUsage `json:"usage"`
		Choices []struct {
			Text    string `json:"text"`
			Message *struct {
				Content string `json:"content"`
			} `json:"message"`
			Delta *struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	take := func(b []byte) {
		var x answer
		if err := json.Unmarshal(b, &x); err != nil {
			t.Fatalf("%s stream=%v: answer %s: %v", endpoint, stream, b, err)
		}
		if x.Object != "" && a.Object == "" {
			a.Object = x.Object
		}
		if x.Usage != nil {
			a.Prompt, a.Cached = x.Usage.PromptTokens, 0
			if x.Usage.Details != nil {
				a.Cached = x.Usage.Details.CachedTokens
			}
		}
		for _, c := range x.Choices {
			a.Text += c.Text
			if c.Message != nil {
				a.Text += c.Message.Content
			}
			if c.Delta != nil {
				a.Text += c.Delta.Content
			}
		}
	}
	if !stream {
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s: non-streaming answer has Content-Type %q", endpoint, ct)
		}
		take(raw)
		return a
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		take([]byte(d))
	}
	return a
}

// TestSimPrefixAffinity: three simulators behind the router, for vLLM's
// array-encoded and map-encoded KV events: a repeated prompt, for
// completions and chat, streamed and not, goes back to the worker that
// served it with overlap > 0 and the engine reports cached_tokens > 0,
// exactly the tokens the router predicted.
func TestSimPrefixAffinity(t *testing.T) {
	skipShort(t)
	sim := SimBinary(t, root)
	for _, mapEvents := range []bool{false, true} {
		name := "array"
		if mapEvents {
			name = "map"
		}
		t.Run(name, func(t *testing.T) {
			f := StartSimFleet(t, bins.Kvrouter, sim, 3, SimConfig{MapEvents: mapEvents})
			r := f.Router
			doc := 100
			if mapEvents {
				doc = 200
			}
			for _, endpoint := range []string{"completions", "chat"} {
				for _, stream := range []bool{false, true} {
					doc++
					text := document(doc, 300)
					first := askSim(t, r, endpoint, stream, text)
					if first.Object == "" || first.Text == "" || first.Cached != 0 {
						t.Fatalf("%s stream=%v: first answer %+v, want an answer with usage and no cached tokens", endpoint, stream, first)
					}
					blocks := first.Prompt / 16
					WaitWorkerBlocks(t, r, first.Worker, blocks, 20*time.Second)
					again := askSim(t, r, endpoint, stream, text)
					if again.Worker != first.Worker || again.Overlap == 0 || again.Cached <= 0 {
						t.Fatalf("%s stream=%v: first to worker %d; repeat to worker %d with overlap %d, engine cached_tokens %d; want the same worker, overlap > 0, cached > 0",
							endpoint, stream, first.Worker, again.Worker, again.Overlap, again.Cached)
					}
					if again.Overlap*16 != again.Cached {
						t.Errorf("%s stream=%v: predicted %d cached tokens (overlap %d), the engine reported %d",
							endpoint, stream, again.Overlap*16, again.Overlap, again.Cached)
					}
					if want := map[string]string{"completions": "text_completion", "chat": "chat.completion"}[endpoint]; !stream && again.Object != want {
						t.Errorf("%s: non-streaming answer object %q, want %q", endpoint, again.Object, want)
					}
				}
			}
			rep := routerIndex(t, r)
			for _, w := range rep.Workers {
				if w.Prediction != nil && w.Prediction.Accuracy != 1 {
					t.Errorf("worker %d prediction accuracy %+v, want 1", w.Worker, *w.Prediction)
				}
			}
			_, metrics, err := r.Get("/metrics")
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"kvrouter_predicted_cached_tokens_total", "kvrouter_reported_cached_tokens_total", "kvrouter_events_applied_total"} {
				if !strings.Contains(metrics, want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}
		})
	}
}

// simIndex is the part of /debug/index these tests read.
type simIndex struct {
	Workers []struct {
		Worker     uint64 `json:"worker_id"`
		Down       bool   `json:"down"`
		Total      int    `json:"total_blocks"`
		Prediction *struct {
			Requests  int     `json:"requests"`
			Predicted int     `json:"predicted_cached_tokens"`
			Reported  int     `json:"reported_cached_tokens"`
			Accuracy  float64 `json:"accuracy"`
		} `json:"prediction"`
	} `json:"workers"`
}

func routerIndex(t *testing.T, r *Router) simIndex {
	t.Helper()
	status, body, err := r.Get("/debug/index")
	if err != nil || status != http.StatusOK {
		t.Fatalf("/debug/index: %d %v %s", status, err, body)
	}
	var d simIndex
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// workerState is (down, blocks) of worker id in r's /debug/index.
func workerState(t *testing.T, r *Router, id uint64) (bool, int) {
	for _, w := range routerIndex(t, r).Workers {
		if w.Worker == id {
			return w.Down, w.Total
		}
	}
	t.Fatalf("worker %d not in /debug/index", id)
	return false, 0
}

// TestSimKillRestart: a simulator killed with SIGKILL is taken out of
// routing (requests go to the others, its blocks leave the index), and once
// restarted it is probed back into routing with none of its old blocks.
func TestSimKillRestart(t *testing.T) {
	skipShort(t)
	sim := SimBinary(t, root)
	f := StartSimFleet(t, bins.Kvrouter, sim, 3, SimConfig{}, "--load-poll", "100ms")
	r := f.Router
	text := document(300, 300)
	first := askSim(t, r, "completions", true, text)
	WaitWorkerBlocks(t, r, first.Worker, first.Prompt/16, 20*time.Second)
	victim := f.Sims[first.Worker-1]
	victim.Kill()
	for i := range 4 {
		a := askSim(t, r, "completions", true, document(310+i, 100))
		if a.Worker == victim.ID {
			t.Fatalf("request %d went to the killed worker %d", i, victim.ID)
		}
	}
	WaitFor(t, 20*time.Second, "the killed worker marked down with no blocks", func() (bool, string) {
		down, blocks := workerState(t, r, victim.ID)
		return down && blocks == 0, fmt.Sprintf("down=%v blocks=%d", down, blocks)
	})
	if ok, body := r.Ready(); !ok {
		t.Fatalf("router not ready with two of three workers up: %s", body)
	}
	victim.Restart(t)
	victim.WaitHealthy(t, 60*time.Second)
	WaitFor(t, 30*time.Second, "the restarted worker back in routing", func() (bool, string) {
		down, blocks := workerState(t, r, victim.ID)
		return !down, fmt.Sprintf("down=%v blocks=%d", down, blocks)
	})
	// Its old blocks are gone: the repeat finds nothing cached on it.
	status, body, err := postJSON(r.URL()+"/route", map[string]any{"prompt": text})
	if err != nil || status != http.StatusOK {
		t.Fatalf("/route: %d %v %s", status, err, body)
	}
	var rr struct {
		Candidates []struct {
			Worker  uint64 `json:"worker_id"`
			Out     string `json:"filtered"`
			Overlap [3]int `json:"overlap_blocks"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(body), &rr); err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, c := range rr.Candidates {
		if c.Worker == victim.ID {
			seen = true
			if c.Out != "" || c.Overlap[0] != 0 {
				t.Errorf("restarted worker's candidate %+v, want eligible with no overlap", c)
			}
		}
	}
	if !seen {
		t.Fatalf("restarted worker %d is no candidate: %s", victim.ID, body)
	}
}

// TestSimRestartClearsStaleBlocks: a simulator restarted before the router
// noticed (no health polling) starts its ZMQ sequence again; its first
// new batch clears the blocks the index still held for it.
func TestSimRestartClearsStaleBlocks(t *testing.T) {
	skipShort(t)
	sim := SimBinary(t, root)
	f := StartSimFleet(t, bins.Kvrouter, sim, 2, SimConfig{}, "--load-poll", "-1s")
	r := f.Router
	old := document(400, 300)
	first := askSim(t, r, "completions", true, old)
	before := WaitWorkerBlocks(t, r, first.Worker, first.Prompt/16, 20*time.Second)
	victim := f.Sims[first.Worker-1]
	// Take the victim's event sequence well past where the restarted
	// engine starts (each prompt waited for is its own batch, flushed
	// within a second): then the first batches of the restarted engine,
	// lost if published before its subscription is up, cannot make the
	// next look like the old sequence going on (seq last+1).
	for range 4 {
		n := before
		before = f.WaitEventsFlow(t, victim, 30*time.Second, "a pre-restart batch indexed", func(blocks int) bool { return blocks > n })
	}
	victim.Kill()
	victim.Restart(t)
	victim.WaitHealthy(t, 60*time.Second)
	// Short prompts straight to the restarted engine: its first events
	// carry sequence numbers from 1 again.
	f.WaitEventsFlow(t, victim, 30*time.Second, "the restart to clear the stale blocks", func(blocks int) bool {
		return blocks > 0 && blocks < before
	})
	again := askSim(t, r, "completions", true, old)
	if again.Worker == victim.ID && again.Overlap != 0 {
		t.Errorf("after the restart the router still claims %d blocks of the old prompt on worker %d", again.Overlap, victim.ID)
	}
}

// TestSimLoRA: the router learns the simulator's LoRA adapter from its
// /v1/models (parent set) and hashes requests for it with the adapter's
// name as salt, as the simulator's events (lora_name) are: a repeated
// adapter prompt finds its blocks, and the engine's cached_tokens equal the
// prediction; the same prompt for the base model finds none of them.
func TestSimLoRA(t *testing.T) {
	skipShort(t)
	sim := SimBinary(t, root)
	lora := `{"name":"sql-lora","path":"/adapters/sql","base_model_name":"` + Model + `"}`
	f := StartSimFleet(t, bins.Kvrouter, sim, 2, SimConfig{Extra: []string{"--lora-modules", lora}})
	r := f.Router
	WaitFor(t, 20*time.Second, "the router to learn the adapter", func() (bool, string) {
		return strings.Contains(r.Proc.Log(0), `LoRA adapter learnt`), "not in the router log yet"
	})
	text := document(500, 300)
	first := askSimModel(t, r, "sql-lora", "completions", false, text)
	WaitWorkerBlocks(t, r, first.Worker, first.Prompt/16, 20*time.Second)
	again := askSimModel(t, r, "sql-lora", "completions", false, text)
	if again.Worker != first.Worker || again.Overlap == 0 || again.Cached != again.Overlap*16 {
		t.Fatalf("adapter repeat: first worker %d, repeat worker %d overlap %d cached %d; want the same worker, overlap > 0, cached = overlap x 16",
			first.Worker, again.Worker, again.Overlap, again.Cached)
	}
	status, body, err := postJSON(r.URL()+"/route", map[string]any{"prompt": text})
	if err != nil || status != http.StatusOK {
		t.Fatalf("/route: %d %v %s", status, err, body)
	}
	var rr struct {
		Overlap [3]int `json:"overlap_blocks"`
	}
	if err := json.Unmarshal([]byte(body), &rr); err != nil || rr.Overlap[0] != 0 {
		t.Errorf("the base model's lookup of the adapter's prompt: %s (%v), want no overlap", body, err)
	}
}

// TestSimDiagnosesTokenizerMismatch: a router that tokenizes chats with
// its built-in tokenizer instead of the engine's never predicts the hits
// the simulator reports, although the simulator's events arrive; after a
// window of such requests it logs one diagnosis naming the tokenizer.
func TestSimDiagnosesTokenizerMismatch(t *testing.T) {
	skipShort(t)
	sim := SimBinary(t, root)
	f := StartSimFleet(t, bins.Kvrouter, sim, 1, SimConfig{}, "--tokenizer", "builtin")
	r := f.Router
	text := document(600, 200)
	for range 20 {
		askSim(t, r, "chat", false, text)
	}
	WaitFor(t, 10*time.Second, "one diagnosis in the router log", func() (bool, string) {
		log := r.Proc.Log(0)
		return strings.Count(log, "prefix-hit prediction gap") == 1 && strings.Contains(log, "cause=hash_seed_salt_or_tokenizer"),
			fmt.Sprintf("%d diagnoses logged", strings.Count(log, "prefix-hit prediction gap"))
	})
	_, metrics, err := r.Get("/metrics")
	if err != nil || !strings.Contains(metrics, `kvrouter_prediction_diagnoses_total{cause="hash_seed_salt_or_tokenizer"} 1`) {
		t.Errorf("/metrics (%v) lacks the diagnosis counter", err)
	}
}
