package router

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// BenchmarkTierChains measures what the cross-tier view (Config.TierChains)
// costs, side by side with it off: routing a 64-block prompt over 64
// workers, and applying a device store and its removal (16 blocks each),
// in a G1-only fleet and in one whose workers also report host blocks
// (a host chain from the root, which both modes accept).
func BenchmarkTierChains(b *testing.B) {
	for _, fleet := range []string{"g1", "host"} {
		for _, chains := range []bool{false, true} {
			name := fmt.Sprintf("fleet=%s/chains=%v", fleet, chains)
			b.Run(name+"/route", func(b *testing.B) {
				r, toks := tierBenchRouter(b, chains, fleet == "host")
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					id := fmt.Sprint("r", i%1024)
					if _, err := r.Route(ctx, Request{ID: id, Tokens: toks}, epoch); err != nil {
						b.Fatal(err)
					}
					if err := r.Free(id, epoch); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/apply", func(b *testing.B) {
				r, toks := tierBenchRouter(b, chains, fleet == "host")
				w := kvevents.Worker{ID: 1}
				st := storedEvent(r, w, kvevents.TierDevice, toks[64*16:80*16], "", "", 0)
				st.HasParent, st.Parent = false, 0
				rm := &kvevents.Event{WorkerID: 1, Kind: kvevents.KindRemoved}
				for _, bl := range st.Blocks {
					rm.Hashes = append(rm.Hashes, bl.Hash)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if err := r.ApplyEvent(st); err != nil {
						b.Fatal(err)
					}
					if err := r.ApplyEvent(rm); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// tierBenchRouter is benchRouter's 64-worker fleet (B=16) with TierChains
// set, and with host, every worker also holding a host chain of the
// prompt deeper than its device prefix. The prompt has 64 blocks; the
// apply benchmark uses tokens beyond it.
func tierBenchRouter(b *testing.B, chains, host bool) (*Router, []uint32) {
	b.Helper()
	cfg := DefaultConfig()
	cfg.BlockSize = 16
	cfg.TierChains = chains
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		b.Fatal(err)
	}
	toks := make([]uint32, 80*16)
	for i := range toks {
		toks[i] = uint32(i)
	}
	for i := range 64 {
		w := kvevents.Worker{ID: uint64(i + 1)}
		if err := r.AddWorker(WorkerInfo{ID: w.ID, MaxNumBatchedTokens: 8192}); err != nil {
			b.Fatal(err)
		}
		if depth := (i * 7 % 64) * 16; depth > 0 {
			if err := r.ApplyEvent(storedEvent(r, w, kvevents.TierDevice, toks[:depth], "", "", 1)); err != nil {
				b.Fatal(err)
			}
		}
		if host {
			depth := min(64, i*7%64+i%9+1) * 16
			if err := r.ApplyEvent(storedEvent(r, w, kvevents.TierHostPinned, toks[:depth], "", "", 1)); err != nil {
				b.Fatal(err)
			}
		}
	}
	return r, toks[:64*16]
}
