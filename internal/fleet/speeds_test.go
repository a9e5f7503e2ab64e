package fleet_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/mocker"
)

// A fleet given per-worker speedup ratios starts worker i+1 with ratio i
// (the rest of the engine config shared), derives the worker count from
// them, and rejects a count mismatch or a non-positive ratio.
func TestFleetSpeedupRatios(t *testing.T) {
	eng := mocker.DefaultConfig()
	eng.NumBlocks, eng.SpeedupRatio = 1024, 4
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	want := []float64{8, 2, 0.5}
	f, err := fleet.New(fleet.Config{Engine: eng, SpeedupRatios: want, Direct: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	runFleet(t, f)
	ws := f.Workers()
	if len(ws) != len(want) {
		t.Fatalf("%d workers, want %d (one per ratio)", len(ws), len(want))
	}
	for i, w := range ws {
		c := w.Server().Config().Engine
		if c.SpeedupRatio != want[i] || c.NumBlocks != eng.NumBlocks {
			t.Errorf("worker %d: speedup %v, %d blocks; want %v, %d", w.ID, c.SpeedupRatio, c.NumBlocks, want[i], eng.NumBlocks)
		}
	}

	for _, bad := range []fleet.Config{
		{Workers: 2, SpeedupRatios: []float64{8, 2, 2}},
		{SpeedupRatios: []float64{8, 0}},
		{SpeedupRatios: []float64{-1}},
	} {
		bad.Engine, bad.Direct, bad.Logger = eng, true, log
		if f, err := fleet.New(bad); err == nil {
			t.Errorf("fleet.New(workers %d, ratios %v) = nil error, want one", bad.Workers, bad.SpeedupRatios)
			_ = f
		}
	}
}
