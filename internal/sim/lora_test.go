package sim

import (
	"context"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/trace"
)

// loraRun runs the kv policy on recs over workers engines with adapters
// (blind: the router never learns where they are loaded) and returns its
// report and, per adapter, the workers that served it.
func loraRun(t *testing.T, recs []trace.Record, workers int, lc LoRAConfig) (PolicyReport, map[int]map[int]bool) {
	t.Helper()
	cfg := smallConfig(recs, workers)
	cfg.Policies = []Policy{PolicyKV}
	cfg.LoRA = lc
	cfg.KeepRequests = true
	rep, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Policies[0]
	if p.Completed != len(recs) {
		t.Fatalf("blind %v: completed %d of %d", lc.Blind, p.Completed, len(recs))
	}
	keys := sessionKeys(recs, lc.Adapters)
	where := map[int]map[int]bool{} // adapter -> workers that served it
	for _, row := range p.RequestRows {
		a := adapterOf(keys[row.ID], lc.Adapters)
		if where[a] == nil {
			where[a] = map[int]bool{}
		}
		where[a][row.Worker] = true
	}
	return p, where
}

// loraPair runs recs on 4 workers under lc with the router told where
// adapters are loaded, then blind, and logs the two side by side.
func loraPair(t *testing.T, recs []trace.Record, lc LoRAConfig) (pref, blind PolicyReport, prefWhere, blindWhere map[int]map[int]bool) {
	t.Helper()
	pref, prefWhere = loraRun(t, recs, 4, lc)
	lc.Blind = true
	blind, blindWhere = loraRun(t, recs, 4, lc)
	t.Logf("loads: priced %d, blind %d; adapter-worker pairs %d vs %d (%d adapters used); TTFT p50 %.1f vs %.1f, p99 %.1f vs %.1f ms",
		pref.LoRALoads, blind.LoRALoads, spread(prefWhere), spread(blindWhere), len(prefWhere), pref.TTFT.P50, blind.TTFT.P50, pref.TTFT.P99, blind.TTFT.P99)
	return pref, blind, prefWhere, blindWhere
}

// spread counts adapter-worker pairs that served requests.
func spread(m map[int]map[int]bool) (n int) {
	for _, ws := range m {
		n += len(ws)
	}
	return n
}

// TestLoRAPreference: conversations over 6 adapters on 4 workers of 2
// slots each, at light load. With the router told where adapters are
// loaded (the live path's /v1/models), the adapter term of its cost
// keeps each adapter on few workers: fewer loads than the same kv policy
// blind to adapters, and fewer workers per adapter. Every request
// completes either way.
func TestLoRAPreference(t *testing.T) {
	recs := conversations(24, 6, 400*time.Millisecond, 3)
	lc := LoRAConfig{Adapters: 6, MaxLoRAs: 2, LoadTime: 20 * time.Millisecond}
	pref, blind, prefWhere, blindWhere := loraPair(t, recs, lc)
	if len(prefWhere) < 4 {
		t.Fatalf("only %d adapters used: the session keys do not spread", len(prefWhere))
	}
	if pref.LoRALoads == 0 || pref.LoRALoads >= blind.LoRALoads {
		t.Fatalf("adapter loads: %d priced, %d blind; want fewer (and some)", pref.LoRALoads, blind.LoRALoads)
	}
	if spread(prefWhere) >= spread(blindWhere) {
		t.Fatalf("adapter-worker pairs: %d priced, %d blind", spread(prefWhere), spread(blindWhere))
	}
}

// TestLoRASpillsUnderLoad: two adapters over 4 workers with free slots,
// loaded enough that one worker per adapter cannot keep up. A loaded
// adapter is priced, not a filter: once its workers' queues cost more
// than a load, requests spill onto other workers (a filter pins each
// adapter to its first worker and leaves half the fleet idle), so some
// adapter runs on several workers and TTFT p99 stays within 10% of the
// blind router's (which ignores adapters and balances freely).
func TestLoRASpillsUnderLoad(t *testing.T) {
	recs := conversations(48, 4, 150*time.Millisecond, 5)
	lc := LoRAConfig{Adapters: 2, MaxLoRAs: 4, LoadTime: 15 * time.Millisecond}
	pref, blind, prefWhere, _ := loraPair(t, recs, lc)
	if len(prefWhere) != 2 {
		t.Fatalf("%d adapters used, want 2", len(prefWhere))
	}
	if spread(prefWhere) <= len(prefWhere) {
		t.Fatalf("each adapter stayed on one worker: %v", prefWhere)
	}
	if pref.TTFT.P99 > 1.1*blind.TTFT.P99 {
		t.Fatalf("TTFT p99 %.1f ms priced, %.1f blind", pref.TTFT.P99, blind.TTFT.P99)
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
