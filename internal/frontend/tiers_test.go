package frontend

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// TestRouteAndIndexTiers: with the cross-tier view, a worker whose prompt
// prefix is half on the device and half offloaded to the host (a host
// store under a device parent) wins the route; /route names the overlap
// and credit of every tier and /debug/index counts each tier's blocks and
// what the credit reads as reachable.
func TestRouteAndIndexTiers(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) { c.Router.TierChains = true })
	for id := uint64(1); id <= 2; id++ {
		if err := s.AddWorker(Worker{ID: id, URL: "http://127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
	}
	B := s.Router().Config().BlockSize
	toks := make([]uint32, 5*B)
	for i := range toks {
		toks[i] = uint32(1000 + i)
	}
	locals := kvhash.LocalHashes(toks, B, kvhash.Seed("", ""))
	seq := kvhash.SeqHashes(locals)
	blocks := func(lo, hi int) []kvevents.Block {
		var out []kvevents.Block
		for i := lo; i < hi; i++ {
			out = append(out, kvevents.Block{Hash: seq[i], Local: locals[i]})
		}
		return out
	}
	for _, ev := range []kvevents.Event{
		{WorkerID: 1, EventID: 1, Kind: kvevents.KindStored, Blocks: blocks(0, 2)},
		{WorkerID: 1, EventID: 2, Kind: kvevents.KindStored, Tier: kvevents.TierHostPinned, HasParent: true, Parent: seq[1], Blocks: blocks(2, 4)},
	} {
		if err := s.Apply(&ev); err != nil {
			t.Fatal(err)
		}
	}
	ts := make([]string, len(toks))
	for i, v := range toks {
		ts[i] = fmt.Sprint(v)
	}
	// Index writers are asynchronous: /debug/index flushes them first.
	rec := do(t, s.Handler(), "GET", "/debug/index", "")
	var ix IndexReport
	if err := json.Unmarshal(rec.Body.Bytes(), &ix); err != nil || rec.Code != 200 {
		t.Fatalf("/debug/index: %d %v %s", rec.Code, err, rec.Body)
	}
	var w1 *IndexSummary
	for i := range ix.Workers {
		if ix.Workers[i].Worker == 1 {
			w1 = &ix.Workers[i]
		}
	}
	if w1 == nil || w1.Blocks["device"] != 2 || w1.Blocks["host_pinned"] != 2 || w1.Total != 4 ||
		w1.Reachable["host_pinned"] != 4 || w1.Reachable["disk"] != 4 {
		t.Fatalf("worker 1 in /debug/index: %+v\n%s", w1, rec.Body)
	}

	rec = do(t, s.Handler(), "POST", "/route", `{"tokens":[`+strings.Join(ts, ",")+`]}`)
	var rr RouteResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &rr); err != nil || rec.Code != 200 {
		t.Fatalf("/route: %d %v %s", rec.Code, err, rec.Body)
	}
	if rr.Worker != 1 || rr.TierOverlap["device"] != 2 || rr.TierOverlap["host_pinned"] != 4 || rr.CachedTokens != 4*B {
		t.Fatalf("/route chose %d, tier overlap %v, cached %d: %s", rr.Worker, rr.TierOverlap, rr.CachedTokens, rec.Body)
	}
	sc := s.Router().Config().Selector
	for _, c := range rr.Candidates {
		if c.Worker != 1 {
			continue
		}
		want := map[string]float64{"device": 2 * sc.OverlapCredit, "host_pinned": 2 * sc.HostWeight, "disk": 0, "external": 0}
		for k, v := range want {
			if got := c.TierCredit[k]; got != v {
				t.Errorf("worker 1 %s credit %v, want %v: %+v", k, got, v, c)
			}
		}
		if c.Credit != want["device"]+want["host_pinned"] {
			t.Errorf("worker 1 credit %v is not the sum of its tiers' %v", c.Credit, c.TierCredit)
		}
	}
}
