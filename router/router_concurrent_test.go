package router

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Many goroutines route, finish and apply events at once (run with -race);
// afterwards every load is back to zero and the callbacks saw every
// decision.
func TestConcurrentUse(t *testing.T) {
	var routed atomic.Int64
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	r, err := New(cfg, Options{
		Rand:   rand.New(rand.NewPCG(1, 2)),
		Events: Events{OnRoute: func(*Request, *Decision) { routed.Add(1) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	const workers, goroutines, perG = 4, 8, 50
	for i := range workers {
		if err := r.AddWorker(WorkerInfo{ID: uint64(i + 1), DPSize: 2}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	// One event writer per worker+rank (the Index contract).
	for i := range workers {
		for rk := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := kvevents.Worker{ID: uint64(i + 1), Rank: uint32(rk)}
				for n := range 20 {
					toks := make([]uint32, 16)
					for k := range toks {
						toks[k] = uint32(n%4*100 + k)
					}
					if err := r.ApplyEvent(storedEvent(r, w, kvevents.TierDevice, toks, "", "", uint64(n+1))); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perG {
				id := fmt.Sprintf("g%d-%d", g, n)
				toks := make([]uint32, 24)
				for k := range toks {
					toks[k] = uint32(n%4*100 + k)
				}
				d, err := r.Route(context.Background(), Request{ID: id, Tokens: toks}, epoch)
				if err != nil {
					t.Error(err)
					return
				}
				if len(d.Candidates) != workers*2 {
					t.Errorf("%d candidates", len(d.Candidates))
				}
				if err := r.PrefillDone(id, epoch); err != nil {
					t.Error(err)
				}
				if err := r.Free(id, epoch); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if got := routed.Load(); got != goroutines*perG {
		t.Errorf("OnRoute called %d times, want %d", got, goroutines*perG)
	}
	s := r.Stats()
	if s.Active != 0 || s.Routed != goroutines*perG || s.EventsApplied != workers*2*20 {
		t.Errorf("stats %+v", s)
	}
	for i := range workers {
		for rk := range 2 {
			if l := r.Load(kvevents.Worker{ID: uint64(i + 1), Rank: uint32(rk)}); l.Requests != 0 || l.DecodeBlocks != 0 || l.PrefillTokens != 0 {
				t.Errorf("leaked load %s", l)
			}
		}
	}
}

func TestNewValidates(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BlockSize = 0
	cfg.Queue.Threshold = -1
	if _, err := New(cfg, Options{}); err == nil {
		t.Fatal("New accepted a bad config and no rng")
	} else if errStatus(err) != 500 {
		t.Fatal(err)
	}
	r, err := New(DefaultConfig(), Options{Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Route(context.Background(), Request{ID: "x", Tokens: make([]uint32, 64)}, epoch); errStatus(err) != 503 {
		t.Errorf("no workers: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Route(ctx, Request{ID: "x"}, epoch); err != context.Canceled {
		t.Errorf("cancelled ctx: %v", err)
	}
	if err := r.UpdateWorkerMetrics(kvevents.Worker{ID: 9}, Metrics{KVUsage: 0.5}); err == nil {
		t.Error("metrics of unknown worker accepted")
	}
	if _, err := r.Route(context.Background(), Request{ID: "y", Locals: []uint64{1, 2}, ISL: 10}, epoch); errStatus(err) != 400 {
		t.Errorf("2 blocks of 64 in 10 tokens: %v", err)
	}
}
