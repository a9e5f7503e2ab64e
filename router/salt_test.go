package router

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// TestCacheSaltSeparatesTenants: worker 1 caches a prompt under cache_salt
// "tenant-a" (block 0's local hash salted, as vLLM's events name it),
// worker 2 the same prompt unsalted. A request credits only the worker
// that holds its own salt's blocks: same salt shares, another salt or none
// shares nothing.
func TestCacheSaltSeparatesTenants(t *testing.T) {
	const bs, n = 16, 4
	toks := make([]uint32, n*bs)
	for i := range toks {
		toks[i] = uint32(i * 7)
	}
	cfg := DefaultConfig()
	cfg.BlockSize = bs
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	for id, salt := range map[uint64]string{1: "tenant-a", 2: ""} {
		if err := r.AddWorker(WorkerInfo{ID: id, MaxNumBatchedTokens: 8192}); err != nil {
			t.Fatal(err)
		}
		locals := kvhash.SaltLocals(kvhash.LocalHashes(toks, bs, kvhash.DefaultSeed), salt)
		seqs := kvhash.SeqHashes(locals)
		ev := &kvevents.Event{WorkerID: id, Tier: kvevents.TierDevice, EventID: 1, Kind: kvevents.KindStored}
		for j := range locals {
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: seqs[j], Local: locals[j]})
		}
		if err := r.ApplyEvent(ev); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		salt   string
		w1, w2 int // expected device overlap
	}{
		{"tenant-a", n, 0},
		{"tenant-b", 0, 0},
		{"", 0, n},
	} {
		d, err := r.Route(context.Background(), Request{ID: "q-" + c.salt, Tokens: toks, CacheSalt: c.salt}, epoch)
		if err != nil {
			t.Fatal(err)
		}
		got := map[uint64]int{}
		for _, cd := range d.Candidates {
			got[cd.Worker.ID] = cd.Overlap[kvevents.TierDevice]
		}
		if got[1] != c.w1 || got[2] != c.w2 {
			t.Errorf("salt %q: overlap w1=%d w2=%d, want %d %d", c.salt, got[1], got[2], c.w1, c.w2)
		}
		if err := r.Free(d.RequestID, epoch); err != nil {
			t.Fatal(err)
		}
	}
}
