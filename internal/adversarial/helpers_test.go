package adversarial

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/e2e"
)

// Keys of the fleet's router.
const (
	keyA  = "k1"
	keyB  = "k2"
	admin = "adm"
)

var client = &http.Client{Timeout: 30 * time.Second}

// call does one request and returns its status, body and headers
// (status 0 and the error as body when there was no answer).
func call(t testing.TB, method, url, key, body string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error(), http.Header{} // status 0: no answer
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, string(b), resp.Header
}

// metric reads one sample from the router's /metrics (admin key), -1 when
// absent.
func metric(t testing.TB, r *e2e.Router, series string) float64 {
	t.Helper()
	code, body, _ := call(t, "GET", r.URL()+"/metrics", admin, "")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// alive fails the test when the router exited or stopped answering.
func alive(t testing.TB, r *e2e.Router) {
	t.Helper()
	if r.Proc.Exited() {
		t.Fatalf("router exited: %v\n%s", r.Proc.ExitErr(), r.Proc.Log(8<<10))
	}
	if code, _, _ := call(t, "GET", r.URL()+"/healthz", "", ""); code != 200 {
		t.Fatalf("/healthz %d", code)
	}
}

// stream sends a streamed completion and reads up to stopAfter events
// (negative: all), then drops the connection. It returns the status.
func stream(ctx context.Context, url, key, prompt string, maxTokens, stopAfter int) (int, error) {
	body := `{"model":"kvrouter-mock","stream":true,"max_tokens":` + strconv.Itoa(maxTokens) + `,"prompt":` + strconv.Quote(prompt) + `}`
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	n := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
			if stopAfter >= 0 && n >= stopAfter {
				return resp.StatusCode, nil // hang up mid-stream
			}
		}
	}
	return resp.StatusCode, sc.Err()
}

// until polls cond until it holds or d passes (no sleeps in tests).
func until(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	e2e.WaitFor(t, d, what, func() (bool, string) { return cond(), "" })
}

// complete sends a non-streamed completion with key A, retrying until a
// 200 (workers may be joining); it returns the serving worker.
func complete(t testing.TB, r *e2e.Router, prompt string) uint64 {
	t.Helper()
	var w uint64
	until(t, 20*time.Second, "a completion", func() bool {
		code, _, hdr := call(t, "POST", r.URL()+"/v1/completions", keyA,
			`{"model":"kvrouter-mock","max_tokens":2,"prompt":`+strconv.Quote(prompt)+`}`)
		w, _ = strconv.ParseUint(hdr.Get("X-Kvrouter-Worker"), 10, 64)
		return code == 200 && w != 0
	})
	return w
}

// indexBlocks is the number of blocks /debug/index holds for worker.
func indexBlocks(t testing.TB, r *e2e.Router, worker uint64) int {
	t.Helper()
	code, body, _ := call(t, "GET", r.URL()+"/debug/index", admin, "")
	if code != 200 {
		return -1
	}
	var rep struct {
		Workers []struct {
			Worker uint64 `json:"worker_id"`
			Total  int    `json:"total_blocks"`
		} `json:"workers"`
	}
	if json.Unmarshal([]byte(body), &rep) != nil {
		return -1
	}
	n := 0
	for _, w := range rep.Workers {
		if w.Worker == worker {
			n += w.Total
		}
	}
	return n
}
