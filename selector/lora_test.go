package selector

import (
	"fmt"
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

func survivors(req *Request, cands []Candidate) []uint64 {
	out := make([]Reason, len(cands))
	for _, f := range Filters(Config{}) {
		f(req, cands, out)
	}
	var ids []uint64
	for i, r := range out {
		if r == ReasonNone {
			ids = append(ids, cands[i].Worker.ID)
		}
	}
	return ids
}

// A mixed fleet: the filter keeps the loaded tier; without it, one free
// worker chosen by rendezvous; without free slots, one of all.
func TestLoRAFilterMixedFleet(t *testing.T) {
	full1, full2 := loraCand(1, true, 1, "x"), loraCand(2, true, 1, "y")
	free3, free4 := loraCand(3, true, 2, "z"), loraCand(4, true, 0)
	loaded5, loaded6 := loraCand(5, true, 2, "a"), loraCand(6, true, 1, "a")
	req := &Request{LoRA: "a"}

	got := survivors(req, []Candidate{full1, free3, loaded5, full2, free4, loaded6})
	if fmt.Sprint(got) != "[5 6]" {
		t.Fatalf("loaded tier: kept %v, want [5 6]", got)
	}
	got = survivors(req, []Candidate{full1, free3, full2, free4})
	win, _ := Rendezvous("a", []uint64{3, 4})
	if len(got) != 1 || got[0] != win {
		t.Fatalf("free tier: kept %v, want [%d]", got, win)
	}
	got = survivors(req, []Candidate{full1, full2})
	win, _ = Rendezvous("a", []uint64{1, 2})
	if len(got) != 1 || got[0] != win {
		t.Fatalf("any tier: kept %v, want [%d]", got, win)
	}
	// Base-model requests and fleets that report nothing are untouched.
	if got := survivors(&Request{}, []Candidate{full1, free3, loaded5}); len(got) != 3 {
		t.Fatalf("base model: kept %v", got)
	}
	if got := survivors(req, []Candidate{loraCand(1, false, 0), loraCand(2, false, 0)}); len(got) != 2 {
		t.Fatalf("unreported fleet: kept %v", got)
	}
	// Every rank of the rendezvous worker stays.
	r0, r1 := free3, free3
	r1.Worker.Rank = 1
	win, _ = Rendezvous("a", []uint64{3, 4})
	got = survivors(req, []Candidate{r0, r1, free4})
	if win == 3 && fmt.Sprint(got) != "[3 3]" || win == 4 && fmt.Sprint(got) != "[4]" {
		t.Fatalf("ranks: kept %v (winner %d)", got, win)
	}
}

// An already filtered-out loaded worker does not pull the tier up.
func TestLoRAFilterAfterOtherFilters(t *testing.T) {
	req := &Request{LoRA: "a", Constraints: Constraints{Allow: []uint64{3, 4}}}
	got := survivors(req, []Candidate{loraCand(5, true, 2, "a"), loraCand(3, true, 2), loraCand(4, true, 2)})
	win, _ := Rendezvous("a", []uint64{3, 4})
	if len(got) != 1 || got[0] != win {
		t.Fatalf("kept %v, want [%d]", got, win)
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
