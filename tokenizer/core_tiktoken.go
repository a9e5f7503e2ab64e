package tokenizer

import (
	"fmt"

	tiktoken "github.com/pkoukk/tiktoken-go"
)

// bpeCore is the tiktoken BPE core (github.com/pkoukk/tiktoken-go
// NewCoreBPE) over ranks converted from tokenizer.json.
type bpeCore struct {
	enc   *tiktoken.Tiktoken
	bytes [][]byte // id -> raw bytes (vocab only)
}

func newBPECore(ranks map[string]int, special map[string]uint32, pattern string) (*bpeCore, error) {
	sp := make(map[string]int, len(special))
	set := make(map[string]any, len(special)) // NB: non-nil, see DEPS.md §6
	for k, v := range special {
		sp[k] = int(v)
		set[k] = true
	}
	core, err := tiktoken.NewCoreBPE(ranks, sp, pattern)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: build BPE: %w", err)
	}
	maxID := 0
	for _, id := range ranks {
		maxID = max(maxID, id)
	}
	c := &bpeCore{bytes: make([][]byte, maxID+1)}
	for s, id := range ranks {
		c.bytes[id] = []byte(s)
	}
	c.enc = tiktoken.NewTiktoken(core, &tiktoken.Encoding{PatStr: pattern, MergeableRanks: ranks, SpecialTokens: sp}, set)
	return c, nil
}

// appendOrdinaryStop checks stop once, before: the tiktoken-go encoder
// cannot be interrupted.
func (c *bpeCore) appendOrdinaryStop(dst []uint32, text string, stop func() bool) []uint32 {
	if stop != nil && stop() {
		return dst
	}
	return c.appendOrdinary(dst, text)
}

func (c *bpeCore) appendOrdinary(dst []uint32, text string) []uint32 {
	for _, id := range c.enc.EncodeOrdinary(text) {
		dst = append(dst, uint32(id))
	}
	return dst
}

func (c *bpeCore) tokenBytes(id uint32) ([]byte, bool) {
	if int(id) >= len(c.bytes) || c.bytes[id] == nil {
		return nil, false
	}
	return c.bytes[id], true
}
