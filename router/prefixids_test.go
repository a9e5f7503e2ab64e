package router

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// TestRoutePrefixIDsPath routes prompts given as tokens at 64 tokens per
// block, whose prefix ids the router computes beside the hashes (in
// AVX-512 where the CPU has it) and Flash reads, and checks each
// lookup against the index's own lookup of the local hashes, and each
// decision against a router that takes the prompts as local hashes
// (Request.Locals: no ids). Workers hold prefixes of several depths,
// across jump strides, and prompts diverge from them at several places.
func TestRoutePrefixIDsPath(t *testing.T) {
	const bs, n, w = 64, 300, 12
	rng := rand.New(rand.NewPCG(4, 2))
	base := make([]uint32, n*bs)
	for i := range base {
		base[i] = rng.Uint32()
	}
	locals := kvhash.LocalHashes(base, bs, kvhash.Seed("", ""))
	seqs := kvhash.SeqHashes(locals)
	build := func() *Router {
		cfg := DefaultConfig()
		cfg.BlockSize = bs
		r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 1))})
		if err != nil {
			t.Fatal(err)
		}
		for i := range w {
			id := uint64(i + 1)
			if err := r.AddWorker(WorkerInfo{ID: id, MaxNumBatchedTokens: 8192}); err != nil {
				t.Fatal(err)
			}
			depth := (i * 53) % n
			ev := &kvevents.Event{WorkerID: id, Tier: kvevents.TierDevice, EventID: 1, Kind: kvevents.KindStored}
			for j := range depth {
				ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: seqs[j], Local: locals[j]})
			}
			if depth > 0 {
				if err := r.ApplyEvent(ev); err != nil {
					t.Fatal(err)
				}
			}
		}
		return r
	}
	withIDs, withLocals := build(), build()
	if withIDs.idApp[kvevents.TierDevice] == nil {
		t.Fatal("router does not pass prefix ids to its index")
	}
	for k, cut := range []int{n, 1, 2, 63, 64, 65, 128, 200, 299} {
		toks := slices.Clone(base)
		if cut < n {
			toks[cut*bs+3]++ // the prompt leaves the workers' chain at block cut
		}
		ls := kvhash.LocalHashes(toks, bs, kvhash.Seed("", ""))
		id := string(rune('a' + k))
		// The lookup alone: with the ids as the index's own.
		p, err := withIDs.prepare(&Request{ID: id, Tokens: toks})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.ids) != len(ls) {
			t.Fatalf("cut %d: %d prefix ids for %d blocks", cut, len(p.ids), len(ls))
		}
		withIDs.lookupKV(p)
		if got, want := p.ov[kvevents.TierDevice], withIDs.idx[kvevents.TierDevice].FindMatches(ls); !slices.Equal(got, want) {
			t.Fatalf("cut %d: lookup with ids %v, index %v", cut, got, want)
		}
		putPending(p)
		// Whole decisions (the predicted side index included).
		d1, err := withIDs.Route(context.Background(), Request{ID: id, Tokens: toks}, epoch)
		if err != nil {
			t.Fatal(err)
		}
		d2, err := withLocals.Route(context.Background(), Request{ID: id, Locals: ls, ISL: len(toks)}, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(d1.Candidates, d2.Candidates) {
			t.Fatalf("cut %d: candidates with ids %v, from locals %v", cut, d1.Candidates, d2.Candidates)
		}
		if d1.Worker != d2.Worker {
			t.Fatalf("cut %d: routed to %s with ids, %s from locals", cut, d1.Worker, d2.Worker)
		}
	}
}
