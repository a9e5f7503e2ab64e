package replay

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/cputime"
)

// allInFlight is a gate that holds every request until each of the
// labelled paths has one waiting at it: it opens only if the paths are
// measured at the same time.
type allInFlight struct {
	mu      sync.Mutex
	waiting map[string]int
	open    chan struct{}
	opened  bool
}

func (g *allInFlight) wait(ctx context.Context, label string) error {
	g.mu.Lock()
	g.waiting[label]++
	if !g.opened && len(g.waiting) == gatePaths {
		g.opened = true
		close(g.open)
	}
	g.mu.Unlock()
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gatePaths is how many paths must wait at the gate before it opens.
const gatePaths = 3

// sseServer answers completions with two streamed tokens once the gate
// opens.
func sseServer(t *testing.T, label string, g *allInFlight) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if err := g.wait(r.Context(), label); err != nil {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for range 2 {
			_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\n")
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestInterleavedRoundsOverlapTargets: in an interleaved round every path
// has requests in flight at once, so a stall of the machine delays them
// all alike. The gate holds every request until all three paths have one
// waiting; sequential phases (the default) never open it, since each
// phase waits for its own requests before the next starts, and end at the
// context's deadline instead.
func TestInterleavedRoundsOverlapTargets(t *testing.T) {
	g := &allInFlight{waiting: map[string]int{}, open: make(chan struct{})}
	var targets []benchTarget
	for _, l := range []string{"direct", "frontend", "floor-proxy"} {
		targets = append(targets, benchTarget{l, sseServer(t, l, g).URL})
	}
	cfg := BenchConfig{Rate: 300, Duration: 200 * time.Millisecond, PromptTokens: 8, MaxTokens: 2, Rounds: 2, Interleave: true}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	next := uint64(1)
	got, rounds, _, err := benchRounds(ctx, cfg, http.DefaultClient, targets, &next)
	if err != nil {
		t.Fatalf("interleaved rounds: %v (the paths were not in flight together)", err)
	}
	if len(rounds) != 2 {
		t.Fatalf("%d rounds", len(rounds))
	}
	for _, tg := range targets {
		reps := got[tg.label]
		if len(reps) != 2 {
			t.Fatalf("%s: %d reports", tg.label, len(reps))
		}
		for _, r := range reps {
			if r.Requests != 20 || r.OK != 20 || r.OutputTokens != 40 {
				t.Errorf("%s: %d/%d ok, %d output tokens (want 20 requests at 300/3 req/s for 200 ms, 2 tokens each)",
					tg.label, r.OK, r.Requests, r.OutputTokens)
			}
		}
	}
	for i, r := range rounds {
		if !r.Interleaved || r.FrontendFirst || r.FloorTTFTp50 <= 0 || r.TTFTp50 <= 0 {
			t.Errorf("round %d: %+v", i, r)
		}
		if _, _, ok := cputime.Sched(); ok && (len(r.Sched) != 1 || r.Sched[0].Label != "all" || r.Sched[0].CPUSec <= 0) {
			t.Errorf("round %d: sched %+v", i, r.Sched)
		}
	}
}

// TestBenchRoundsPoisson: every phase of a sequential round is paced by
// the round's Poisson process (seed cfg.Seed, stream round+1), the same
// for every path; an interleaved round deals one process to the paths in
// turn.
func TestBenchRoundsPoisson(t *testing.T) {
	g := &allInFlight{waiting: map[string]int{}, open: make(chan struct{}), opened: true}
	close(g.open)
	targets := []benchTarget{{"direct", sseServer(t, "direct", g).URL}, {"frontend", sseServer(t, "frontend", g).URL}}
	for _, interleave := range []bool{false, true} {
		cfg := BenchConfig{Rate: 400, Duration: 50 * time.Millisecond, PromptTokens: 8, MaxTokens: 2, Rounds: 2, Seed: 3,
			Interleave: interleave}
		next := uint64(5)
		got, _, stopped, err := benchRounds(context.Background(), cfg, http.DefaultClient, targets, &next)
		if err != nil {
			t.Fatal(err)
		}
		if stopped != "2 rounds asked for" {
			t.Errorf("stopped: %q", stopped)
		}
		for _, tg := range targets {
			for round, r := range got[tg.label] {
				want, ok := Poisson(400, 20, 3, uint64(round)+1).String(), 20
				if interleave {
					k := 0
					if (tg.label == "frontend") != (round%2 == 1) {
						k = 1
					}
					p := Poisson(400, 20, 3, uint64(round)+1).Every(2, k)
					want, ok = p.String(), len(p.times)
				}
				if r.Pacer != want || r.OK != ok {
					t.Errorf("interleave %v, %s round %d: pacer %q, want %q; %d ok, want %d", interleave, tg.label, round, r.Pacer, want, r.OK, ok)
				}
			}
		}
	}
}

// TestBenchRoundsAuto: with Rounds 0 the rounds stop by StopRounds on the
// frontend/direct verdicts (no floor proxy): an even number between
// MinAutoRounds and MaxAutoRounds, and decided verdicts when it says so.
func TestBenchRoundsAuto(t *testing.T) {
	g := &allInFlight{waiting: map[string]int{}, open: make(chan struct{}), opened: true}
	close(g.open)
	targets := []benchTarget{{"direct", sseServer(t, "direct", g).URL}, {"frontend", sseServer(t, "frontend", g).URL}}
	cfg := BenchConfig{Rate: 400, Duration: 20 * time.Millisecond, PromptTokens: 8, MaxTokens: 2, Seed: 1}
	next := uint64(1)
	got, rounds, stopped, err := benchRounds(context.Background(), cfg, http.DefaultClient, targets, &next)
	if err != nil {
		t.Fatal(err)
	}
	n := len(rounds)
	if n < MinAutoRounds || n > MaxAutoRounds || n%2 != 0 || len(got["direct"]) != n || len(got["frontend"]) != n {
		t.Fatalf("%d rounds (%d, %d reports), want an even number in [%d, %d]", n, len(got["direct"]), len(got["frontend"]),
			MinAutoRounds, MaxAutoRounds)
	}
	d50, d99, _, _ := benchVerdicts(rounds, false)
	if want, _ := StopRounds(n, []Verdict{d50, d99}, true); !want || stopped == "" {
		t.Errorf("stopped after %d rounds (%q), which StopRounds does not accept: %+v %+v", n, stopped, d50, d99)
	}
}
