package mocker

import (
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/invariants"
)

// TestInvariantGate: invariant builds check the engine after every pass, so
// corrupted bookkeeping panics at the next Step instead of drifting. Run
// with -tags invariants (as CI does).
func TestInvariantGate(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("the gate is compiled in only with -tags invariants")
	}
	cfg := DefaultConfig()
	cfg.NumBlocks, cfg.BlockSize, cfg.SpeedupRatio = 64, 4, 0
	e := New(cfg)
	if err := e.Add(Request{ID: 1, Tokens: []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}, MaxOutputTokens: 4}); err != nil {
		t.Fatal(err)
	}
	e.Step(0)       // a healthy pass passes the check
	e.pool.active++ // break free + inactive + active == blocks
	defer func() {
		r := recover()
		msg, _ := r.(string)
		if !strings.Contains(msg, "invariant violated") || !strings.Contains(msg, "active") {
			t.Fatalf("Step on a corrupted pool: recover() = %v, want an invariant panic", r)
		}
	}()
	e.Step(e.Now())
	t.Fatal("Step on a corrupted pool did not panic")
}
