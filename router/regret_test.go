package router

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kvrouter/kvrouter/kvhash"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/selector"
)

// cand is a candidate of worker id holding dev device blocks, out for
// reason out (ReasonNone: scored at cost).
func cand(id uint64, dev int, out selector.Reason, cost float64) selector.Breakdown {
	b := selector.Breakdown{Worker: kvevents.Worker{ID: id}, Out: out, Cost: cost}
	b.Overlap[kvevents.TierDevice] = dev
	return b
}

// TestRegretCauses provokes each cause from a decision's candidates: w1
// holds 8 of 10 blocks, the chosen w2 holds 2, so 6 are lost.
func TestRegretCauses(t *testing.T) {
	none := selector.ReasonNone
	for _, tc := range []struct {
		name    string
		cands   []selector.Breakdown
		waited  bool
		aff     bool
		want    Cause
		wantMax int
	}{
		{"load", []selector.Breakdown{cand(1, 8, none, 9), cand(2, 2, none, 5)}, false, false, CauseLoad, 8},
		{"load-tie", []selector.Breakdown{cand(1, 8, none, 5), cand(2, 2, none, 5)}, false, false, CauseLoad, 8},
		{"temperature", []selector.Breakdown{cand(1, 8, none, 3), cand(2, 2, none, 5)}, false, false, CauseTemperature, 8},
		{"busy", []selector.Breakdown{cand(1, 8, selector.ReasonBusy, 0), cand(2, 2, none, 5)}, false, false, CauseBusy, 8},
		{"filter", []selector.Breakdown{cand(1, 8, selector.ReasonNotAllow, 0), cand(2, 2, none, 5)}, false, false, CauseFilter, 8},
		{"busy-beats-filter", []selector.Breakdown{cand(1, 8, selector.ReasonLabel, 0), cand(3, 8, selector.ReasonBusy, 0), cand(2, 2, none, 5)}, false, false, CauseBusy, 8},
		{"queue", []selector.Breakdown{cand(1, 8, none, 9), cand(2, 2, none, 5)}, true, false, CauseQueue, 8},
		{"affinity", []selector.Breakdown{cand(1, 8, none, 3), cand(2, 2, none, 5)}, false, true, CauseAffinity, 8},
		{"none", []selector.Breakdown{cand(1, 2, none, 9), cand(2, 2, none, 5)}, false, false, CauseNone, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decision{Worker: kvevents.Worker{ID: 2}, Blocks: 10, Candidates: tc.cands, Waited: tc.waited, Affinity: tc.aff}
			d.Overlap[kvevents.TierDevice] = 2
			rg := RegretOf(&d)
			if rg.Cause != tc.want || rg.Reachable != tc.wantMax || rg.Chosen != 2 || rg.Lost != tc.wantMax-2 || rg.Prompt != 10 {
				t.Fatalf("RegretOf = %+v, want cause %s reachable %d chosen 2", rg, tc.want, tc.wantMax)
			}
		})
	}
}

// TestRegretTiersAndCaps: a holder's lower tiers count, the shared G4
// chain does not, and nothing exceeds the prompt's blocks.
func TestRegretTiersAndCaps(t *testing.T) {
	h := cand(1, 1, selector.ReasonNone, 9)
	h.Overlap[kvevents.TierDisk] = 30 // beyond the 10-block prompt
	h.Overlap[kvevents.TierExternal] = 40
	d := Decision{Worker: kvevents.Worker{ID: 2}, Blocks: 10, Candidates: []selector.Breakdown{h, cand(2, 0, selector.ReasonNone, 5)}}
	d.Overlap[kvevents.TierExternal] = 40
	if rg := RegretOf(&d); rg.Reachable != 10 || rg.Chosen != 0 || rg.Lost != 10 || rg.Cause != CauseLoad {
		t.Fatalf("RegretOf = %+v", rg)
	}
	if rg := RegretOf(&Decision{Queued: true, Blocks: 10}); rg != (Regret{}) {
		t.Fatalf("queued decision has regret %+v", rg)
	}
}

// regretFleet is a router of two workers (B=4, 100-token batches)
// where worker 1 holds the 10 blocks of the returned prompt.
func regretFleet(t *testing.T, set func(*Config)) (*Router, []uint32) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	if set != nil {
		set(&cfg)
	}
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 2; id++ {
		if err := r.AddWorker(WorkerInfo{ID: id, MaxNumBatchedTokens: 100, TotalKVBlocks: 4096, BlockSize: 4}); err != nil {
			t.Fatal(err)
		}
	}
	prompt := regretTokens(1000, 40)
	ev := &kvevents.Event{WorkerID: 1, EventID: 1, Kind: kvevents.KindStored}
	for i, l := range kvhash.LocalHashes(prompt, 4, kvhash.Seed("", "")) {
		ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: uint64(1 + i), Local: l})
	}
	if err := r.ApplyEvent(ev); err != nil {
		t.Fatal(err)
	}
	return r, prompt
}

func regretTokens(from, n int) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = uint32(from + i)
	}
	return s
}

// TestRegretThroughRouter provokes each routing cause with the real
// selector: the holder worker 1 out by an allow-list (filter), over a
// busy threshold (busy), loaded by a long pinned prompt (load), or
// cheapest but sampled away at a high temperature (temperature).
func TestRegretThroughRouter(t *testing.T) {
	ctx, now := context.Background(), time.Unix(0, 0)
	t.Run("filter", func(t *testing.T) {
		r, prompt := regretFleet(t, nil)
		d, err := r.Route(ctx, Request{ID: "p", Tokens: prompt, Constraints: selector.Constraints{Allow: []uint64{2}}}, now)
		if rg := RegretOf(&d); err != nil || rg.Cause != CauseFilter || rg.Lost != 10 {
			t.Fatalf("%v %+v", err, rg)
		}
	})
	t.Run("busy", func(t *testing.T) {
		r, prompt := regretFleet(t, func(c *Config) { c.Selector.BusyKVUsage = 0.5 })
		if err := r.UpdateWorkerMetrics(kvevents.Worker{ID: 1}, Metrics{KVUsage: 0.9}); err != nil {
			t.Fatal(err)
		}
		d, err := r.Route(ctx, Request{ID: "p", Tokens: prompt}, now)
		if rg := RegretOf(&d); err != nil || rg.Cause != CauseBusy || rg.Lost != 10 {
			t.Fatalf("%v %+v", err, rg)
		}
	})
	t.Run("load", func(t *testing.T) {
		r, prompt := regretFleet(t, nil)
		big := Request{ID: "big", Tokens: regretTokens(10000, 400), Constraints: selector.Constraints{Pin: &kvevents.Worker{ID: 1}}}
		if _, err := r.Route(ctx, big, now); err != nil {
			t.Fatal(err)
		}
		d, err := r.Route(ctx, Request{ID: "p", Tokens: prompt}, now)
		if rg := RegretOf(&d); err != nil || rg.Cause != CauseLoad || rg.Lost != 10 {
			t.Fatalf("%v %+v\n%s", err, rg, &d)
		}
	})
	t.Run("temperature", func(t *testing.T) {
		// No predicted side index: a pick of worker 2 would make it a holder.
		r, prompt := regretFleet(t, func(c *Config) { c.Predict = PredictConfig{} })
		away := 0
		for i := range 200 {
			id := fmt.Sprint("p", i)
			d, err := r.Route(ctx, Request{ID: id, Tokens: prompt, Overrides: selector.Overrides{Temperature: selector.Float(100)}}, now)
			if err != nil {
				t.Fatal(err)
			}
			rg := RegretOf(&d)
			if d.Worker.ID == 2 {
				away++
				if rg.Cause != CauseTemperature || rg.Lost != 10 {
					t.Fatalf("sampled away: %+v\n%s", rg, &d)
				}
			} else if rg.Lost != 0 {
				t.Fatalf("on the holder: %+v", rg)
			}
			if err := r.Free(id, now); err != nil {
				t.Fatal(err)
			}
		}
		if away == 0 {
			t.Fatal("temperature 100 never sampled worker 2")
		}
	})
}

// TestRegretQueueThroughRouter: a request that waits in the queue and is
// released onto a worker other than the one holding its prefix carries
// Waited, so its lost blocks are the queue's.
func TestRegretQueueThroughRouter(t *testing.T) {
	r, prompt := regretFleet(t, func(c *Config) { c.Queue.Threshold = 0.5 })
	now := time.Unix(0, 0)
	ctx := context.Background()
	for id, w := range map[string]uint64{"big": 1, "small": 2} {
		n := 400
		if w == 2 {
			n = 60
		}
		req := Request{ID: id, Tokens: regretTokens(int(w)*10000, n), Constraints: selector.Constraints{Pin: &kvevents.Worker{ID: w}}}
		if d, err := r.Route(ctx, req, now); err != nil || d.Queued || d.Worker.ID != w {
			t.Fatalf("route %s: %v %+v", id, err, d)
		}
	}
	d, err := r.Route(ctx, Request{ID: "p", Tokens: prompt}, now)
	if err != nil || !d.Queued {
		t.Fatalf("p not queued: %v %+v", err, d)
	}
	if rg := RegretOf(&d); rg != (Regret{}) {
		t.Fatalf("queued decision has regret %+v", rg)
	}
	if err := r.PrefillDone("small", now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	rel := r.Release(now.Add(time.Second))
	if len(rel) != 1 || rel[0].Err != nil || rel[0].Decision.Worker.ID != 2 || !rel[0].Decision.Waited {
		t.Fatalf("released %+v", rel)
	}
	if rg := RegretOf(&rel[0].Decision); rg.Cause != CauseQueue || rg.Reachable != 10 || rg.Chosen != 0 || rg.Lost != 10 {
		t.Fatalf("RegretOf = %+v, want 10 blocks lost to the queue", rg)
	}
}
