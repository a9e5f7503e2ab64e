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
	"sync"
	"testing"
	"time"
)

// TestSimQueueWithDefaultBudget: two llm-d-inference-sim workers that
// declare no max-batched-tokens (vLLM reports it in no metric), behind
// `kvrouter serve --queue-threshold 0.01 --queue-capacity 2` and otherwise
// defaults: the fleet budget (--worker-max-batched-tokens, 8192) applies,
// so once both workers hold a prefill longer than 1% of it, the next two
// requests queue and the two after are refused with 529; the queued ones
// are served once the first finish. On the old code nothing queued: the
// workers' budget was unknown, so they were never saturated, and all six
// were proxied.
func TestSimQueueWithDefaultBudget(t *testing.T) {
	skipShort(t)
	sim := SimBinary(t, root)
	f := StartSimFleet(t, bins.Kvrouter, sim, 2, SimConfig{Extra: []string{"--time-to-first-token", simSlowTTFT}},
		"--queue-threshold", "0.01", "--queue-capacity", "2")
	r := f.Router
	for _, w := range routerBudgets(t, r) {
		if w != 8192 {
			t.Fatalf("worker budgets %v in /debug/index, want 8192 each (the fleet default)", routerBudgets(t, r))
		}
	}

	var (
		mu       sync.Mutex
		statuses []int
		wg       sync.WaitGroup
	)
	refused := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, s := range statuses {
			if s == 529 {
				n++
			}
		}
		return n
	}
	maxQueued := 0
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := complete(t, r, document(500+i, 300))
			mu.Lock()
			statuses = append(statuses, st)
			mu.Unlock()
		}()
		// Each request is booked, queued or refused before the next one
		// is sent, so the order of the outcomes is the order sent.
		WaitFor(t, 20*time.Second, fmt.Sprintf("request %d accounted for", i), func() (bool, string) {
			active, queued := routerGauge(t, r, "kvrouter_active_requests"), routerGauge(t, r, "kvrouter_queue_depth")
			maxQueued = max(maxQueued, queued)
			n := active + queued + refused()
			return n >= i+1, fmt.Sprintf("active %d, queued %d, refused %d", active, queued, refused())
		})
	}
	wg.Wait()
	ok, shed := 0, 0
	for _, s := range statuses {
		switch s {
		case http.StatusOK:
			ok++
		case 529:
			shed++
		}
	}
	if maxQueued != 2 || ok != 4 || shed != 2 {
		t.Fatalf("6 requests on 2 saturated workers: queued at most %d, %d answered, %d refused with 529 (statuses %v); want 2 queued, 4 answered, 2 refused",
			maxQueued, ok, shed, statuses)
	}
}

// simSlowTTFT keeps a request in prefill long enough for the next ones to
// see its load (the simulator's --time-to-first-token).
const simSlowTTFT = "3s"

// complete posts a non-streaming completion through r and returns the
// status.
func complete(t *testing.T, r *Router, prompt string) int {
	body, _ := json.Marshal(map[string]any{"model": Model, "prompt": prompt, "max_tokens": 2})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.URL()+"/v1/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Errorf("completion: %v", err)
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// routerGauge reads an unlabelled gauge from r's /metrics.
func routerGauge(t *testing.T, r *Router, name string) int {
	t.Helper()
	_, body, err := r.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return 0
}

// routerBudgets is each worker's max_batched_tokens in r's /debug/index.
func routerBudgets(t *testing.T, r *Router) map[uint64]int {
	t.Helper()
	_, body, err := r.Get("/debug/index")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Workers []struct {
			Worker uint64 `json:"worker_id"`
			Rank   uint32 `json:"dp_rank"`
			Budget int    `json:"max_batched_tokens"`
		} `json:"workers"`
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	out := map[uint64]int{}
	for _, w := range d.Workers {
		if w.Rank == 0 {
			out[w.Worker] = w.Budget
		}
	}
	return out
}
