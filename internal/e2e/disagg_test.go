package e2e

import (
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

// Response headers of a disaggregated request's prefill hop.
const (
	headerPrefillWorker  = "X-Kvrouter-Prefill-Worker"
	headerPrefillOverlap = "X-Kvrouter-Prefill-Overlap-Blocks"
)

// TestUpDisagg runs `kvrouter up --disagg 2:2` (workers 1-2 prefill, 3-4
// decode, embedded NATS) as a real process and sends streamed and
// non-streamed completions and chats through its router: each names its
// prefill worker and decode worker in the headers, the decode worker
// reports the transferred prompt blocks as cached (usage cached_tokens),
// and its Stored events for them reach the router's index.
func TestUpDisagg(t *testing.T) {
	skipShort(t)
	port := FreePorts(t, 1)[0]
	r := &Router{Name: "up", Port: port}
	r.Proc = Start(t, "up", bins.Kvrouter, "up", "--disagg", "2:2", "--port", strconv.Itoa(port),
		"--block-size", "16", "--num-blocks", "4096", "--speedup-ratio", "0", "--log-level", "info")
	r.WaitReady(t, 60*time.Second)
	WaitFor(t, 30*time.Second, "the router to see 4 workers", func() (bool, string) {
		d, err := r.Index(context.Background())
		if err != nil {
			return false, err.Error()
		}
		return len(d.Workers) >= 4, fmt.Sprintf("%d workers", len(d.Workers))
	})

	decodes := map[string]bool{}
	for i, tc := range []struct {
		path   string
		stream bool
	}{
		{"/v1/completions", false},
		{"/v1/completions", true},
		{"/v1/chat/completions", false},
		{"/v1/chat/completions", true},
	} {
		doc := document(200+i, 120) // ~120 words: several 16-token blocks
		body := map[string]any{"model": Model, "max_tokens": 6, "stream": tc.stream}
		if tc.stream {
			body["stream_options"] = map[string]any{"include_usage": true}
		}
		if strings.Contains(tc.path, "chat") {
			body["messages"] = []map[string]string{{"role": "user", "content": doc}}
		} else {
			body["prompt"] = doc
		}
		resp, text := postDisagg(t, r.URL()+tc.path, body)
		pw, dw := resp.Header.Get(headerPrefillWorker), resp.Header.Get(HeaderWorker)
		name := fmt.Sprintf("%s stream=%t", tc.path, tc.stream)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s\n%s", name, resp.StatusCode, text, r.Proc.Log(40))
		}
		if (pw != "1" && pw != "2") || (dw != "3" && dw != "4") || resp.Header.Get(headerPrefillOverlap) == "" {
			t.Fatalf("%s: prefill worker %q, decode worker %q: want 1|2 and 3|4", name, pw, dw)
		}
		if tc.stream != strings.Contains(text, "[DONE]") {
			t.Fatalf("%s: body %q", name, text)
		}
		cached := cachedTokens(t, text)
		if cached < 16 {
			t.Fatalf("%s: decode worker %s reports %d cached prompt tokens, want the transferred blocks (>= 16): %s", name, dw, cached, text)
		}
		t.Logf("%s: prefill w%s, decode w%s, %d prompt tokens cached on the decode worker", name, pw, dw, cached)
		decodes[dw] = true
	}
	WaitFor(t, 20*time.Second, "the decode workers' Stored events in the index", func() (bool, string) {
		d, err := r.Index(context.Background())
		if err != nil {
			return false, err.Error()
		}
		var detail []string
		ok := true
		for dw := range decodes {
			id, _ := strconv.ParseUint(dw, 10, 64)
			n := d.Blocks(id)
			detail = append(detail, fmt.Sprintf("w%d holds %d blocks", id, n))
			ok = ok && n > 0
		}
		return ok, strings.Join(detail, ", ")
	})
	status, metrics, err := r.Get("/metrics")
	if err != nil || status != http.StatusOK || !strings.Contains(metrics, `kvrouter_disagg_hop_decisions_total{hop="decode"} 4`) {
		t.Fatalf("metrics %d %v: %s", status, err, grepLines(metrics, "kvrouter_disagg"))
	}
}

func postDisagg(t *testing.T, url string, v any) (*http.Response, string) {
	t.Helper()
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// cachedTokens finds usage.prompt_tokens_details.cached_tokens in a JSON
// answer or in the usage chunk of an SSE stream (-1 when absent).
func cachedTokens(t *testing.T, text string) int {
	t.Helper()
	for _, line := range append([]string{text}, strings.Split(text, "\n")...) {
		line = strings.TrimPrefix(strings.TrimSpace(line), "data: ")
		var v struct {
			Usage *struct {
				Details *struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if json.Unmarshal([]byte(line), &v) == nil && v.Usage != nil && v.Usage.Details != nil {
			return v.Usage.Details.Cached
		}
	}
	return -1
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
