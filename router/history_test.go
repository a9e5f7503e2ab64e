package router

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// TestHistoryCredit: with a routing history (Config.Predict.HistoryTTL)
// the worker a prompt was routed to earns selector Config.HistoryWeight
// per block of it once the request ended and its prediction expired, with
// no event saying it holds them; the credit ends with the history's TTL
// and with the worker, and without a history there is none.
func TestHistoryCredit(t *testing.T) {
	mk := func(ttl time.Duration) *Router {
		cfg := DefaultConfig()
		cfg.BlockSize = 4
		cfg.Predict.HistoryTTL = ttl
		cfg.Selector.HistoryWeight = 0.5
		r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 1))})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := r.AddWorker(WorkerInfo{ID: uint64(i + 1), MaxNumBatchedTokens: 64}); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	ctx := context.Background()
	prompt := []uint64{11, 12, 13, 14, 15, 16}
	t0 := time.Unix(100, 0)
	// route routes the prompt at t0+at, ends the request and returns the
	// credit of worker w and the chosen worker.
	route := func(r *Router, id string, w kvevents.Worker, at time.Duration) (float64, kvevents.Worker) {
		now := t0.Add(at)
		d, err := r.Route(ctx, Request{ID: id, Locals: prompt}, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Free(id, now); err != nil {
			t.Fatal(err)
		}
		for _, b := range d.Candidates {
			if b.Worker == w {
				return b.Credit, d.Worker
			}
		}
		t.Fatalf("worker %v not a candidate", w)
		return 0, d.Worker
	}
	credit := func(r *Router, id string, w kvevents.Worker, at time.Duration) float64 {
		c, _ := route(r, id, w, at)
		return c
	}
	for _, ttl := range []time.Duration{time.Minute, 0} {
		r := mk(ttl)
		d, err := r.Route(ctx, Request{ID: "a", Locals: prompt}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Free("a", t0); err != nil {
			t.Fatal(err)
		}
		w := d.Worker
		want := 0.0
		if ttl > 0 {
			want = 0.5 * float64(len(prompt))
		}
		if c := credit(r, "b", w, 10*time.Second); c != want {
			t.Errorf("history %v, 10 s later: credit %v, want %v", ttl, c, want)
		}
		c, w2 := route(r, "c", w, 2*time.Minute)
		if c != 0 {
			t.Errorf("history %v, past its TTL: credit %v, want 0", ttl, c)
		}
		if ttl == 0 {
			if r.history != nil {
				t.Error("a history without a TTL")
			}
			continue
		}
		// "c" went to w2: the history holds the prompt there again, until
		// the worker leaves.
		if c := credit(r, "d", w2, 2*time.Minute+time.Second); c != want {
			t.Errorf("history %v, 1 s after routing to %v again: credit %v, want %v", ttl, w2, c, want)
		}
		r.RemoveWorker(w2.ID)
		if err := r.AddWorker(WorkerInfo{ID: w2.ID, MaxNumBatchedTokens: 64}); err != nil {
			t.Fatal(err)
		}
		if c := credit(r, "e", w2, 2*time.Minute+2*time.Second); c != 0 {
			t.Errorf("after the worker left: credit %v, want 0", c)
		}
	}
}

// TestHistoryValidate: negative history knobs are rejected.
func TestHistoryValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Predict.HistoryTTL = -time.Second
	cfg.Selector.HistoryWeight = -1
	cfg.Selector.HistoryTie = -1
	err := cfg.Validate()
	for _, want := range []string{"history TTL", "HistoryWeight", "HistoryTie"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to name %s", err, want)
		}
	}
}
