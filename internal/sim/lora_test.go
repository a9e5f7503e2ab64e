package sim

import (
	"context"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/trace"
)

// TestLoRAPreference: conversations over 6 adapters on 4 workers of 2
// slots each. With the router told where adapters are loaded (the live
// path's /v1/models), its LoRA preference keeps each adapter on few
// workers: fewer loads than the same kv policy blind to adapters, and
// fewer workers per adapter. Every request completes either way.
func TestLoRAPreference(t *testing.T) {
	recs := conversations(24, 6, 400*time.Millisecond, 3)
	run := func(blind bool) (PolicyReport, map[int]map[int]bool) {
		cfg := smallConfig(recs, 4)
		cfg.Policies = []Policy{PolicyKV}
		cfg.LoRA = LoRAConfig{Adapters: 6, MaxLoRAs: 2, LoadTime: 20 * time.Millisecond, Blind: blind}
		cfg.KeepRequests = true
		rep, err := Run(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := rep.Policies[0]
		if p.Completed != len(recs) {
			t.Fatalf("blind %v: completed %d of %d", blind, p.Completed, len(recs))
		}
		keys := sessionKeys(recs, 6)
		where := map[int]map[int]bool{} // adapter -> workers that served it
		for _, row := range p.RequestRows {
			a := adapterOf(keys[row.ID], 6)
			if where[a] == nil {
				where[a] = map[int]bool{}
			}
			where[a][row.Worker] = true
		}
		return p, where
	}
	pref, prefWhere := run(false)
	blind, blindWhere := run(true)
	spread := func(m map[int]map[int]bool) (n int) {
		for _, ws := range m {
			n += len(ws)
		}
		return n
	}
	t.Logf("loads: preference %d, blind %d; adapter-worker pairs: %d vs %d (%d adapters used); TTFT p50 %.1f vs %.1f ms",
		pref.LoRALoads, blind.LoRALoads, spread(prefWhere), spread(blindWhere), len(prefWhere), pref.TTFT.P50, blind.TTFT.P50)
	if len(prefWhere) < 4 {
		t.Fatalf("only %d adapters used: the session keys do not spread", len(prefWhere))
	}
	if pref.LoRALoads == 0 || pref.LoRALoads >= blind.LoRALoads {
		t.Fatalf("adapter loads: %d with the preference, %d blind; want fewer (and some)", pref.LoRALoads, blind.LoRALoads)
	}
	if spread(prefWhere) >= spread(blindWhere) {
		t.Fatalf("adapter-worker pairs: %d with the preference, %d blind", spread(prefWhere), spread(blindWhere))
	}
}

// TestSessionKeys: a block every request shares (a system prompt) is no
// session key; a conversation's own first block is, for all its turns.
func TestSessionKeys(t *testing.T) {
	recs := []trace.Record{
		{HashIDs: []uint64{0, 1, 10}}, {HashIDs: []uint64{0, 1, 10, 11}},
		{HashIDs: []uint64{0, 1, 20}}, {HashIDs: []uint64{0, 1, 20, 21}},
		{HashIDs: []uint64{0, 1}}, {},
	}
	got := sessionKeys(recs, 3)
	want := []uint64{10, 10, 20, 20, 1, 5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("keys %v, want %v", got, want)
		}
	}
}
