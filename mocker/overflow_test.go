package mocker

import (
	"errors"
	"math"
	"testing"
)

// TestAddMaxOutputNearIntMax: an output limit near 2^63 must be refused as
// too long, not wrap the block arithmetic into a tiny (admitted) request
// that then generates forever.
func TestAddMaxOutputNearIntMax(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumBlocks, cfg.BlockSize = 64, 16
	for _, max := range []int{math.MaxInt, math.MaxInt - 1, math.MaxInt - 15, math.MaxInt / 2, 64*16 + 1} {
		e := New(cfg)
		err := e.Add(Request{ID: 1, Tokens: []uint32{1, 2, 3}, MaxOutputTokens: max})
		if !errors.Is(err, ErrTooLong) {
			t.Errorf("max_output_tokens %d: err %v, want ErrTooLong", max, err)
		}
	}
	e := New(cfg)
	if err := e.Add(Request{ID: 1, Tokens: []uint32{1, 2, 3}, MaxOutputTokens: 10}); err != nil {
		t.Errorf("small request refused: %v", err)
	}
}
