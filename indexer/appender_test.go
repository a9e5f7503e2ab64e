package indexer

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvrouter/kvrouter/kvhash"
)

// TestAppendMatchesIDsWrappers: Concurrent and Sharded pass the query's
// prefix ids down to Flash and answer what FindMatches does, and WantsIDs
// says whether the ids are read (not over Radix).
func TestAppendMatchesIDsWrappers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	f := NewFlash(FlashConfig{Stride: 4})
	sh := NewSharded(3, func() Index { return NewFlash(FlashConfig{Stride: 4}) })
	for w := range 12 {
		for _, ev := range churnEvents(rng, uint64(w+1), 40) {
			_ = f.Apply(&ev)
			_ = sh.Apply(&ev)
		}
	}
	c := NewConcurrent(f, ConcurrentConfig{})
	for i := range 300 {
		q := randomQuery(rng)
		ids := kvhash.AppendPrefixIDs(nil, q)
		want := f.FindMatches(q)
		if got := c.AppendMatchesIDs(nil, q, ids); !slices.Equal(got, want) {
			t.Fatalf("query %d %v: Concurrent with ids %v, want %v", i, q, got, want)
		}
		if got := sh.AppendMatchesIDs(nil, q, ids); !slices.Equal(got, want) || !slices.Equal(sh.FindMatches(q), want) {
			t.Fatalf("query %d %v: Sharded with ids %v, without %v, want %v", i, q, got, sh.FindMatches(q), want)
		}
	}
	radix := NewConcurrent(NewRadix(RadixConfig{}), ConcurrentConfig{})
	for _, tc := range []struct {
		name string
		a    IDMatchAppender
		want bool
	}{
		{"flash", f, true},
		{"concurrent flash", c, true},
		{"sharded flash", sh, true},
		{"concurrent radix", radix, false},
		{"sharded radix", NewSharded(2, func() Index { return NewRadix(RadixConfig{}) }), false},
	} {
		if got := tc.a.WantsIDs(); got != tc.want {
			t.Errorf("%s: WantsIDs %v, want %v", tc.name, got, tc.want)
		}
	}
}
