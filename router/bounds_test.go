package router

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/loads"
)

// TestAddWorkerBounds: a registration's sizes are input, not programmer
// error: absurd values are refused with ErrBadWorker, never a panic or a
// huge allocation (a dp_size of 2^62 used to panic in make).
func TestAddWorkerBounds(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 0))})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range []WorkerInfo{
		{ID: 1, DPSize: 1 << 62},
		{ID: 1, DPSize: math.MaxInt},
		{ID: 1, DPSize: MaxDPSize + 1},
		{ID: 1, DPSize: -1},
		{ID: 1, TotalKVBlocks: -5},
		{ID: 1, MaxNumBatchedTokens: math.MinInt},
		{ID: 1, MaxNumSeqs: -1},
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("AddWorker(%+v) panicked: %v", info, p)
				}
			}()
			if err := r.AddWorker(info); !errors.Is(err, ErrBadWorker) {
				t.Errorf("AddWorker(%+v) = %v, want ErrBadWorker", info, err)
			}
		}()
	}
	if st := r.Stats(); st.Workers != 0 {
		t.Errorf("refused workers joined: %+v", st)
	}
	if err := r.AddWorker(WorkerInfo{ID: 2, DPSize: MaxDPSize}); err != nil {
		t.Errorf("dp size at the bound refused: %v", err)
	}
}

// TestOutputTokensNearIntMax: an expected output near 2^63 must not wrap
// the decode-block charge negative (loads below zero make a worker look
// emptier than idle).
func TestOutputTokensNearIntMax(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BlockSize, cfg.TrackOutputBlocks = 4, true
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 0))})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AddWorker(WorkerInfo{ID: 1}); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	if _, err := r.Route(context.Background(), Request{ID: "a", Tokens: []uint32{1, 2, 3, 4}, OutputTokens: math.MaxInt}, now); err != nil {
		t.Fatal(err)
	}
	if l := r.Load(kvevents.Worker{ID: 1}); l.DecodeBlocks < 0 {
		t.Errorf("decode blocks %d after a max-int output", l.DecodeBlocks)
	}
	if err := r.Free("a", now); err != nil {
		t.Fatal(err)
	}
	if l := r.Load(kvevents.Worker{ID: 1}); l != (loads.Load{}) {
		t.Errorf("load after free: %+v", l)
	}
}
