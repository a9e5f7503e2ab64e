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
// slot, 5-6 are full, 7 reports nothing (a free slot for the adapter
// term). Requests for "a" go to 1-2 while their queues cost less than a
// load, then spill onto a free slot, never onto a full worker first;
// requests for "b", loaded nowhere, go to its rendezvous home among the
// workers with a free slot while the fleet is idle; base-model requests see the
// whole fleet.
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
	L, E := cfg.Selector.LoRALoad, cfg.Selector.LoRAEvict
	now := time.Unix(0, 0)
	route := func(id, lora string, n int) router.Decision {
		t.Helper()
		d, err := r.Route(context.Background(), router.Request{ID: id, Tokens: make([]uint32, n), LoRA: lora}, now)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	free := func(ids ...string) {
		for _, id := range ids {
			if err := r.Free(id, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The adapter term per worker for "a": 0 loaded, L free, L+E full.
	wantA := map[uint64]float64{1: 0, 2: 0, 3: L, 4: L, 5: L + E, 6: L + E, 7: L}
	var ids []string
	used := map[uint64]int{}
	spill := uint64(0)
	for i := range 12 {
		id := fmt.Sprint("a", i)
		d := route(id, "a", 256)
		ids = append(ids, id)
		for _, b := range d.Candidates {
			if b.LoRA != wantA[b.Worker.ID] {
				t.Fatalf("request %d: worker %d adapter term %v, want %v", i, b.Worker.ID, b.LoRA, wantA[b.Worker.ID])
			}
		}
		used[d.Worker.ID]++
		if w := d.Worker.ID; w != 1 && w != 2 && spill == 0 {
			spill = w
		}
	}
	if used[1] == 0 || used[2] == 0 {
		t.Fatalf("the cost should spread a's load over both loaded workers first, used %v", used)
	}
	if spill != 3 && spill != 4 && spill != 7 {
		t.Fatalf("a's queue should spill onto a free slot (3, 4, 7) first, went to %d (used %v)", spill, used)
	}
	free(ids...)
	// Idle again: b, loaded nowhere, goes home every time.
	// Free slots for b: 1 (one of two taken), 3, 4, 7; 2, 5, 6 are full.
	home, _ := selector.Rendezvous("b", []uint64{1, 3, 4, 7})
	for i := range 6 {
		id := fmt.Sprint("b", i)
		d := route(id, "b", 64)
		if d.Worker.ID != home {
			t.Fatalf("request %d for unloaded adapter b went to %d, rendezvous home %d", i, d.Worker.ID, home)
		}
		for _, b := range d.Candidates {
			want := L
			if w := b.Worker.ID; w == 2 || w == 5 || w == 6 {
				want += E
			}
			if b.Worker.ID != home {
				want += L
			}
			if b.LoRA != want {
				t.Fatalf("b: worker %d adapter term %v, want %v", b.Worker.ID, b.LoRA, want)
			}
		}
		free(id)
	}
	// Base-model requests see the whole fleet, the full workers too.
	seen := map[uint64]bool{}
	for i := range 14 {
		d := route(fmt.Sprint("base", i), "", 64)
		seen[d.Worker.ID] = true
		for _, b := range d.Candidates {
			if b.LoRA != 0 {
				t.Fatalf("base-model request: worker %d adapter term %v", b.Worker.ID, b.LoRA)
			}
		}
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
