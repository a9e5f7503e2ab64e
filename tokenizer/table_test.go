package tokenizer

import (
	"math/rand/v2"
	"testing"
)

// TestTokenTable: the flat table finds every token of a real vocabulary
// (inline and long ones) with its id, and no string that is not a token
// (random strings, and tokens with a byte changed or cut, which share
// the inline key's words with real tokens).
func TestTokenTable(t *testing.T) {
	ranks := cl100kRanks()
	tt := newTokenTable(ranks)
	for s, id := range ranks {
		if got, ok := tt.get(s); !ok || got != uint32(id) {
			t.Fatalf("%q: got %d %v, want %d", s, got, ok, id)
		}
	}
	rng := rand.New(rand.NewPCG(3, 2))
	misses := 0
	check := func(s string) {
		id, isTok := ranks[s]
		got, ok := tt.get(s)
		if ok != isTok || ok && got != uint32(id) {
			t.Fatalf("%q: got %d %v, want %d %v", s, got, ok, id, isTok)
		}
		if !ok {
			misses++
		}
	}
	for s := range ranks {
		b := []byte(s)
		b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		check(string(b))
		check(s[:len(s)-1] + "\x00")
		check(s + "\x00")
		if len(s) > 1 {
			check(s[1:])
		}
	}
	for range 100_000 {
		b := make([]byte, 1+rng.IntN(20))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		check(string(b))
	}
	if misses < 100_000 {
		t.Errorf("only %d lookups missed: the probe set is too easy", misses)
	}
}
