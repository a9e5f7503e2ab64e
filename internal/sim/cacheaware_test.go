package sim

import (
	"math/rand/v2"
	"testing"
	"time"
)

func seqOf(ids ...uint64) []uint64 { return ids }

func TestCacheAwareSwitch(t *testing.T) {
	cfg := DefaultCacheAwareConfig()
	cfg.BalanceAbsThreshold = 4
	cfg.BalanceRelThreshold = 1.5
	const B = 10
	c := newCacheAware(cfg, 3, B, rand.New(rand.NewPCG(1, 2)))
	long := seqOf(1, 2, 3, 4, 5, 6, 7, 8, 9, 10) // 100 tokens
	c.insert(1, long, 0)
	c.insert(2, seqOf(1, 2), 0)

	// Balanced, match rate 100/105 > 0.5: follow the cache to worker 1.
	if w := c.choose(long, 105); w != 1 {
		t.Errorf("balanced, high match: got w%d, want w1", w)
	}
	// Balanced, best match 2 blocks of 100 tokens = 0.2 <= 0.5: the
	// smallest tree (worker 0, empty).
	other := seqOf(1, 2, 50, 51, 52, 53, 54, 55, 56, 57)
	if w := c.choose(other, 100); w != 0 {
		t.Errorf("balanced, low match: got w%d, want w0 (smallest tree)", w)
	}
	// Exactly at the threshold is not above it.
	if w := c.choose(seqOf(1, 2, 3, 4, 5, 90), 100); w != 0 {
		t.Errorf("match rate 0.5 = threshold: got w%d, want w0", w)
	}

	// Imbalanced on both tests (max-min = 6 > 4 and 6 > 1.5*0): the
	// least-loaded worker, whatever the cache says.
	c.load = []int{0, 6, 3}
	if w := c.choose(long, 105); w != 0 {
		t.Errorf("imbalanced: got w%d, want w0 (shortest queue)", w)
	}
	// Absolute gap large but ratio small: 20 vs 15 (gap 5 > 4, but
	// 20 <= 1.5*15): balanced, follow the cache.
	c.load = []int{15, 20, 16}
	if w := c.choose(long, 105); w != 1 {
		t.Errorf("relative test not met: got w%d, want w1", w)
	}
	// Ratio large but gap small: 1 vs 4 (gap 3 <= 4): balanced.
	c.load = []int{1, 4, 2}
	if w := c.choose(long, 105); w != 1 {
		t.Errorf("absolute test not met: got w%d, want w1", w)
	}
	if c.imbalanced != 1 || c.balancedHits != 3 || c.balancedSmallest != 2 {
		t.Errorf("counters imbalanced=%d hits=%d smallest=%d", c.imbalanced, c.balancedHits, c.balancedSmallest)
	}
}

func TestCacheAwareRouteLoadAndEviction(t *testing.T) {
	cfg := DefaultCacheAwareConfig()
	cfg.MaxTreeTokens = 30 // 3 blocks of 10
	cfg.EvictionInterval = time.Second
	c := newCacheAware(cfg, 1, 10, rand.New(rand.NewPCG(1, 2)))
	p := &prepared{reqs: []request{
		{isl: 40, seq: seqOf(1, 2, 3, 4)},
		{isl: 20, seq: seqOf(1, 2)},
		{isl: 20, seq: seqOf(9, 8)},
	}}
	for i, at := range []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond} {
		if _, _, err := c.route(p, i, at); err != nil {
			t.Fatal(err)
		}
	}
	if c.load[0] != 3 {
		t.Fatalf("load %d, want 3", c.load[0])
	}
	c.free(1, 0)
	c.free(1, 0) // twice: no effect
	if c.load[0] != 2 {
		t.Fatalf("load after free %d, want 2", c.load[0])
	}
	// Tree: 1,2 at 100ms; 3,4 at 0; 9,8 at 200ms: 6 blocks > 3. The sweep
	// at 1 s keeps the 3 most recent, leaves first: 9, 8 and then the
	// younger of 1 (depth 0) and 2 (depth 1) at equal time: 1 stays.
	c.route(&prepared{reqs: []request{{isl: 10, seq: seqOf(77)}}}, 0, time.Second)
	t0 := c.trees[0].nodes
	for _, h := range []uint64{9, 8, 1, 77} {
		if _, ok := t0[h]; !ok {
			t.Errorf("block %d evicted", h)
		}
	}
	for _, h := range []uint64{2, 3, 4} {
		if _, ok := t0[h]; ok {
			t.Errorf("block %d kept", h)
		}
	}
}
