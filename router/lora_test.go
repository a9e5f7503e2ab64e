package router_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// A mixed fleet: workers 1-2 have adapter "a" loaded, 3-4 have a free
// slot, 5-6 are full, 7 reports nothing. Requests for "a" stay on 1-2;
// requests for "b", loaded nowhere, converge on the rendezvous pick among
// the free workers, whatever their load; once that worker reports "b"
// loaded, it stays the only choice.
func TestRouteLoRAMixedFleet(t *testing.T) {
	cfg := router.DefaultConfig()
	cfg.BlockSize = 4
	r, err := router.New(cfg, router.Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	infos := []router.WorkerInfo{
		{ID: 1, LoRAKnown: true, MaxLoRAs: 2, LoRAs: []string{"a"}},
		{ID: 2, LoRAKnown: true, MaxLoRAs: 1, LoRAs: []string{"a"}},
		{ID: 3, LoRAKnown: true, MaxLoRAs: 2, LoRAs: []string{"x"}},
		{ID: 4, LoRAKnown: true, MaxLoRAs: 0},
		{ID: 5, LoRAKnown: true, MaxLoRAs: 1, LoRAs: []string{"x"}},
		{ID: 6, LoRAKnown: true, MaxLoRAs: 2, LoRAs: []string{"x", "y"}},
		{ID: 7},
	}
	for _, w := range infos {
		w.MaxNumBatchedTokens, w.TotalKVBlocks = 8192, 4096
		if err := r.AddWorker(w); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(0, 0)
	prompt := make([]uint32, 64)
	route := func(id, lora string) uint64 {
		t.Helper()
		d, err := r.Route(context.Background(), router.Request{ID: id, Tokens: prompt, LoRA: lora}, now)
		if err != nil {
			t.Fatal(err)
		}
		return d.Worker.ID
	}
	used := map[uint64]bool{}
	for i := range 8 {
		w := route(fmt.Sprint("a", i), "a")
		if w != 1 && w != 2 {
			t.Fatalf("request %d for loaded adapter a went to worker %d", i, w)
		}
		used[w] = true
	}
	if len(used) != 2 {
		t.Fatalf("the cost should spread a's load over both loaded workers, used %v", used)
	}
	// Worker 7 reports nothing, so it counts as free too.
	win, _ := selector.Rendezvous("b", []uint64{3, 4, 7})
	for i := range 6 {
		if w := route(fmt.Sprint("b", i), "b"); w != win {
			t.Fatalf("request %d for unloaded adapter b went to %d, rendezvous says %d", i, w, win)
		}
	}
	if win != 7 {
		if err := r.SetWorkerLoRAs(win, []string{"b"}); err != nil {
			t.Fatal(err)
		}
		if w := route("b-loaded", "b"); w != win {
			t.Fatalf("loaded b: went to %d, want %d", w, win)
		}
	}
	// Base-model requests see the whole fleet, the full workers too.
	seen := map[uint64]bool{}
	for i := range 14 {
		seen[route(fmt.Sprint("base", i), "")] = true
	}
	if !seen[5] && !seen[6] {
		t.Fatalf("base-model requests never reached the full workers 5, 6: %v", seen)
	}
}

func TestSetWorkerLoRAsErrors(t *testing.T) {
	cfg := router.DefaultConfig()
	r, err := router.New(cfg, router.Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetWorkerLoRAs(9, nil); !errors.Is(err, router.ErrUnknownWorker) {
		t.Fatalf("unknown worker: %v", err)
	}
	if err := r.AddWorker(router.WorkerInfo{ID: 1, MaxLoRAs: -1}); !errors.Is(err, router.ErrBadWorker) {
		t.Fatalf("negative max loras: %v", err)
	}
	if err := r.AddWorker(router.WorkerInfo{ID: 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.SetWorkerLoRAs(1, make([]string, router.MaxWorkerLoRAs+1)); !errors.Is(err, router.ErrBadWorker) {
		t.Fatalf("too many adapters: %v", err)
	}
}
