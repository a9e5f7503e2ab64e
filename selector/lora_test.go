package selector

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

func loraCand(id uint64, known bool, max int, loras ...string) Candidate {
	return Candidate{Worker: kvevents.Worker{ID: id}, KVUsage: -1, LoRAKnown: known, MaxLoRAs: max, LoRAs: loras}
}

func TestLoRATier(t *testing.T) {
	cases := []struct {
		c    Candidate
		want int
	}{
		{loraCand(1, true, 2, "a"), LoRATierLoaded},
		{loraCand(1, true, 2, "b"), LoRATierFree},
		{loraCand(1, true, 0, "b", "c", "d"), LoRATierFree},
		{loraCand(1, true, 2, "b", "c"), LoRATierAny},
		{loraCand(1, false, 1, "b"), LoRATierFree},
	}
	for i, tc := range cases {
		if got := LoRATier(&tc.c, "a"); got != tc.want {
			t.Errorf("case %d: tier %d, want %d", i, got, tc.want)
		}
	}
}

// loraTerms selects for req on an idle copy of cands and returns each
// candidate's adapter term (-1 when filtered out) and the chosen worker.
func loraTerms(t *testing.T, cfg Config, req *Request, cands []Candidate) (terms []float64, chosen kvevents.Worker) {
	t.Helper()
	if req.BlockSize == 0 {
		req.ISL, req.BlockSize = 640, 64
	}
	res, err := New(cfg).Select(req, cands, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range res.Breakdowns {
		if b.Out != ReasonNone {
			terms = append(terms, -1)
			continue
		}
		terms = append(terms, b.LoRA)
	}
	return terms, cands[res.Chosen].Worker
}

// A mixed fleet, idle: each worker pays its tier's adapter term, so the
// loaded workers win; with none loaded, the rendezvous home among the
// free workers pays one load and every other worker one more; without
// free slots the home is among all. Nothing is filtered out.
func TestLoRACostMixedFleet(t *testing.T) {
	cfg := DefaultConfig()
	L, E := cfg.LoRALoad, cfg.LoRAEvict
	full1, full2 := loraCand(1, true, 1, "x"), loraCand(2, true, 1, "y")
	free3, free4 := loraCand(3, true, 2, "z"), loraCand(4, true, 0)
	loaded5, loaded6 := loraCand(5, true, 2, "a"), loraCand(6, true, 1, "a")
	req := &Request{LoRA: "a"}

	terms, w := loraTerms(t, cfg, req, []Candidate{full1, free3, loaded5, full2, free4, loaded6})
	if want := []float64{L + E, L, 0, L + E, L, 0}; !slices.Equal(terms, want) {
		t.Fatalf("loaded: terms %v, want %v", terms, want)
	}
	if w.ID != 5 && w.ID != 6 {
		t.Fatalf("loaded: chose %v", w)
	}
	home, _ := Rendezvous("a", []uint64{3, 4})
	terms, w = loraTerms(t, cfg, req, []Candidate{full1, free3, full2, free4})
	want := []float64{2*L + E, 2 * L, 2*L + E, 2 * L}
	want[map[uint64]int{3: 1, 4: 3}[home]] = L
	if !slices.Equal(terms, want) || w.ID != home {
		t.Fatalf("free: terms %v chose %v, want %v and home %d", terms, w, want, home)
	}
	home, _ = Rendezvous("a", []uint64{1, 2})
	terms, w = loraTerms(t, cfg, req, []Candidate{full1, full2})
	if w.ID != home || terms[home-1] != L+E || terms[2-home] != 2*L+E {
		t.Fatalf("full: terms %v chose %v, want home %d", terms, w, home)
	}
	// Base-model requests and fleets that report nothing pay nothing.
	if terms, _ := loraTerms(t, cfg, &Request{}, []Candidate{full1, free3, loaded5}); !slices.Equal(terms, []float64{0, 0, 0}) {
		t.Fatalf("base model: terms %v", terms)
	}
	if terms, _ := loraTerms(t, cfg, req, []Candidate{loraCand(1, false, 0), loraCand(2, false, 0)}); !slices.Equal(terms, []float64{0, 0}) {
		t.Fatalf("unreported fleet: terms %v", terms)
	}
	// Every rank of the home worker is home.
	r0, r1 := free3, free3
	r1.Worker.Rank = 1
	home, _ = Rendezvous("a", []uint64{3, 4})
	terms, _ = loraTerms(t, cfg, req, []Candidate{r0, r1, free4})
	if home == 3 && !slices.Equal(terms, []float64{L, L, 2 * L}) || home == 4 && !slices.Equal(terms, []float64{2 * L, 2 * L, L}) {
		t.Fatalf("ranks: terms %v (home %d)", terms, home)
	}
}

// The adapter term against the queue: a worker holding the adapter keeps
// its requests while its queue costs less than a load elsewhere, and
// loses them once it costs more (the filter this replaced kept them
// whatever the queue).
func TestLoRASpillsPastLoad(t *testing.T) {
	cfg := DefaultConfig()
	req := &Request{ISL: 640, BlockSize: 64, LoRA: "a"}
	free := loraCand(2, true, 2, "x")
	spilled := -1
	for q := 0; q <= 4096; q += 64 {
		loaded := loraCand(1, true, 2, "a")
		loaded.ActivePrefillTokens, loaded.ActiveRequests, loaded.PrefillRequests = q, 1, 1
		if q == 0 {
			loaded.ActiveRequests, loaded.PrefillRequests = 0, 0
		}
		cands := []Candidate{loaded, free}
		_, w := loraTerms(t, cfg, req, cands)
		// What the queue costs on w1 beyond idle w2, without the adapter
		// term: the spill comes exactly where it passes a load.
		extra := Cost(cfg, req.ISL, req.BlockSize, 0, 0, &cands[0]).Cost - Cost(cfg, req.ISL, req.BlockSize, 0, 0, &cands[1]).Cost
		want := uint64(1)
		if extra > cfg.LoRALoad {
			want = 2
			if spilled < 0 {
				spilled = q
			}
		}
		if w.ID != want {
			t.Fatalf("queue %d (%.2f ms more than idle): chose %v, want worker %d", q, extra, w, want)
		}
	}
	if spilled <= 0 {
		t.Fatalf("never spilled (or at once): %d", spilled)
	}
}

// An already filtered-out worker does not take part: a loaded worker
// not allowed leaves the adapter loaded nowhere among the eligible, whose
// home pays one load.
func TestLoRACostAfterOtherFilters(t *testing.T) {
	cfg := DefaultConfig()
	req := &Request{LoRA: "a", Constraints: Constraints{Allow: []uint64{3, 4}}}
	terms, w := loraTerms(t, cfg, req, []Candidate{loraCand(5, true, 2, "a"), loraCand(3, true, 2), loraCand(4, true, 2)})
	home, _ := Rendezvous("a", []uint64{3, 4})
	if w.ID != home || terms[0] != -1 || terms[home-2] != cfg.LoRALoad || terms[5-home] != 2*cfg.LoRALoad {
		t.Fatalf("terms %v chose %v, want home %d", terms, w, home)
	}
}

// Rendezvous is stable under worker removal: only the adapters the removed
// worker won move, and adapters spread over the workers.
func TestRendezvousStableUnderRemoval(t *testing.T) {
	ids := []uint64{11, 22, 33, 44, 55, 66, 77, 88}
	before := map[string]uint64{}
	count := map[uint64]int{}
	for i := range 2000 {
		a := fmt.Sprintf("adapter-%d", i)
		w, ok := Rendezvous(a, ids)
		if !ok {
			t.Fatal("no winner")
		}
		before[a] = w
		count[w]++
	}
	for _, id := range ids {
		// 2000/8 = 250 each; a fair hash stays well within [150, 350].
		if count[id] < 150 || count[id] > 350 {
			t.Errorf("worker %d won %d of 2000 adapters", id, count[id])
		}
	}
	for k, removed := range ids {
		rest := append(append([]uint64{}, ids[:k]...), ids[k+1:]...)
		moved := 0
		for a, w := range before {
			now, _ := Rendezvous(a, rest)
			if w != removed && now != w {
				t.Fatalf("adapter %s moved from %d to %d when %d left", a, w, now, removed)
			}
			if w == removed {
				moved++
			}
		}
		if moved != count[removed] {
			t.Fatalf("moved %d, want %d", moved, count[removed])
		}
	}
	// Order of ids does not matter.
	rev := []uint64{88, 77, 66, 55, 44, 33, 22, 11}
	for a, w := range before {
		if got, _ := Rendezvous(a, rev); got != w {
			t.Fatalf("adapter %s: %d reversed, %d in order", a, got, w)
		}
	}
	if _, ok := Rendezvous("a", nil); ok {
		t.Fatal("winner among no workers")
	}
}
