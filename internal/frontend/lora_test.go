package frontend

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// TestRouteLoRAMixedFleet: on a fleet where workers 1-2 have adapter
// "sql" loaded (2 with its one slot taken), 3-4 a free slot and 5-6 are
// full, /route (untracked: the fleet stays idle) sends requests for "sql"
// to 1-2 and those for "chat" (loaded nowhere) to its rendezvous home
// among the free slots 1, 3 and 4; nobody is filtered out, and the
// breakdown names each candidate's LoRA tier and the adapter term the
// cost charged it.
func TestRouteLoRAMixedFleet(t *testing.T) {
	s := newServer(t, router.PolicyKV)
	fleet := []router.WorkerInfo{
		{LoRAKnown: true, MaxLoRAs: 2, LoRAs: []string{"sql"}},
		{LoRAKnown: true, MaxLoRAs: 1, LoRAs: []string{"sql"}},
		{LoRAKnown: true, MaxLoRAs: 2, LoRAs: []string{"x"}},
		{LoRAKnown: true, MaxLoRAs: 3},
		{LoRAKnown: true, MaxLoRAs: 1, LoRAs: []string{"x"}},
		{LoRAKnown: true, MaxLoRAs: 2, LoRAs: []string{"x", "y"}},
	}
	for i, info := range fleet {
		if err := s.AddWorker(Worker{ID: uint64(i + 1), URL: deadURL(t), Info: info}); err != nil {
			t.Fatal(err)
		}
	}
	wantTier := map[string][]string{
		"sql":  {"loaded", "loaded", "free-slot", "free-slot", "full", "full"},
		"chat": {"free-slot", "full", "free-slot", "free-slot", "full", "full"},
	}
	chat, _ := selector.Rendezvous("chat", []uint64{1, 3, 4})
	sc := s.rt.Config().Selector
	L, E := sc.LoRALoad, sc.LoRAEvict
	term := map[string]float64{"loaded": 0, "free-slot": L, "full": L + E}
	for lora, tiers := range wantTier {
		for n := range 4 {
			rec := do(t, s.Handler(), "POST", "/route", fmt.Sprintf(`{"tokens":[1,2,3,4,5,6,7,8,%d],"lora":%q}`, n, lora))
			var rr RouteResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &rr); err != nil || rec.Code != 200 {
				t.Fatalf("/route %s: %d %v %s", lora, rec.Code, err, rec.Body)
			}
			if lora == "sql" && rr.Worker != 1 && rr.Worker != 2 || lora == "chat" && rr.Worker != chat {
				t.Fatalf("%s request %d went to worker %d (chat's home %d)", lora, n, rr.Worker, chat)
			}
			for _, c := range rr.Candidates {
				if c.LoRATier != tiers[c.Worker-1] || c.Out != "" {
					t.Fatalf("%s: worker %d tier %q filtered %q, want tier %q", lora, c.Worker, c.LoRATier, c.Out, tiers[c.Worker-1])
				}
				want := term[c.LoRATier]
				if lora == "chat" && c.Worker != chat {
					want += L // off the home of an adapter loaded nowhere
				}
				if c.LoRACost != want {
					t.Fatalf("%s: worker %d adapter term %v, want %v", lora, c.Worker, c.LoRACost, want)
				}
			}
		}
	}
}
