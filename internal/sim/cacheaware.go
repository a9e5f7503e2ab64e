package sim

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// cacheAware is the SGLang-router-style baseline (see CacheAwareConfig).
//
// Each worker's approximate tree is a map from block sequence hash to the
// block's last access: a sequence hash names its whole prefix, so the map is
// a prefix tree at block granularity and a prefix match is a walk down the
// request's hashes while the worker holds them.
type cacheAware struct {
	cfg       CacheAwareConfig
	B         int
	rng       *rand.Rand
	trees     []caTree
	load      []int // in-flight requests per worker
	worker    map[int]int
	nextEvict time.Duration

	// Counters for tests and reports.
	balancedHits, balancedSmallest, imbalanced int
}

type caTree struct {
	nodes map[uint64]caNode
}

type caNode struct {
	last  time.Duration
	depth int32
}

func newCacheAware(cfg CacheAwareConfig, workers, blockSize int, rng *rand.Rand) *cacheAware {
	c := &cacheAware{
		cfg:       cfg,
		B:         blockSize,
		rng:       rng,
		trees:     make([]caTree, workers),
		load:      make([]int, workers),
		worker:    make(map[int]int),
		nextEvict: cfg.EvictionInterval,
	}
	for w := range c.trees {
		c.trees[w].nodes = make(map[uint64]caNode)
	}
	return c
}

// match is the number of leading blocks of seq in worker w's tree.
func (c *cacheAware) match(w int, seq []uint64) int {
	t := c.trees[w].nodes
	n := 0
	for _, h := range seq {
		if _, ok := t[h]; !ok {
			break
		}
		n++
	}
	return n
}

// imbalancedNow applies SGLang's two-sided test on in-flight requests.
func (c *cacheAware) imbalancedNow() (bool, int) {
	minW, maxL := 0, c.load[0]
	for w, l := range c.load {
		if l < c.load[minW] {
			minW = w
		}
		maxL = max(maxL, l)
	}
	minL := c.load[minW]
	imb := maxL-minL > c.cfg.BalanceAbsThreshold && float64(maxL) > c.cfg.BalanceRelThreshold*float64(minL)
	return imb, minW
}

// choose picks a worker for a prompt with sequence hashes seq and isl
// tokens, without side effects on the trees.
func (c *cacheAware) choose(seq []uint64, isl int) int {
	if imb, minW := c.imbalancedNow(); imb {
		c.imbalanced++
		return minW // shortest queue (first in worker order on ties)
	}
	best, ties := -1, 0
	bestW := 0
	for w := range c.trees {
		m := c.match(w, seq)
		switch {
		case m > best:
			best, bestW, ties = m, w, 1
		case m == best:
			// Reservoir sampling: uniform among equal matches.
			ties++
			if c.rng.IntN(ties) == 0 {
				bestW = w
			}
		}
	}
	rate := 0.0
	if isl > 0 {
		rate = float64(best*c.B) / float64(isl)
	}
	if rate > c.cfg.CacheThreshold {
		c.balancedHits++
		return bestW
	}
	c.balancedSmallest++
	small, ties := 0, 0
	for w := range c.trees {
		switch {
		case len(c.trees[w].nodes) < len(c.trees[small].nodes):
			small, ties = w, 1
		case len(c.trees[w].nodes) == len(c.trees[small].nodes):
			ties++
			if c.rng.IntN(ties) == 0 {
				small = w
			}
		}
	}
	return small
}

func (c *cacheAware) insert(w int, seq []uint64, now time.Duration) {
	t := c.trees[w].nodes
	for d, h := range seq {
		t[h] = caNode{last: now, depth: int32(d)}
	}
}

// evict trims every tree over MaxTreeTokens down to it, least recently used
// first; among equal access times deeper blocks go first, so a block is
// never evicted before its descendants (a touch of a block touches its
// whole prefix at the same time): leaves go first, as in SGLang.
func (c *cacheAware) evict() {
	maxBlocks := c.cfg.MaxTreeTokens / c.B
	type ent struct {
		h uint64
		n caNode
	}
	var ents []ent
	for w := range c.trees {
		t := c.trees[w].nodes
		if len(t) <= maxBlocks {
			continue
		}
		ents = ents[:0]
		for h, n := range t {
			ents = append(ents, ent{h, n})
		}
		slices.SortFunc(ents, func(a, b ent) int {
			switch {
			case a.n.last != b.n.last:
				return int(a.n.last - b.n.last)
			case a.n.depth != b.n.depth:
				return int(b.n.depth - a.n.depth)
			case a.h < b.h:
				return -1
			case a.h > b.h:
				return 1
			}
			return 0
		})
		for _, e := range ents[:len(t)-maxBlocks] {
			delete(t, e.h)
		}
	}
}

func (c *cacheAware) route(p *prepared, i int, now time.Duration) (int, bool, error) {
	for now >= c.nextEvict {
		c.evict()
		c.nextEvict += c.cfg.EvictionInterval
	}
	r := &p.reqs[i]
	w := c.choose(r.seq, r.isl)
	c.insert(w, r.seq, now)
	c.load[w]++
	c.worker[i] = w
	return w, false, nil
}

func (*cacheAware) prefillDone(int, time.Duration) {}

func (c *cacheAware) free(i int, _ time.Duration) {
	if w, ok := c.worker[i]; ok {
		c.load[w]--
		delete(c.worker, i)
	}
}

func (*cacheAware) release(time.Duration) []released { return nil }
func (*cacheAware) apply([]kvevents.Event)           {}
func (*cacheAware) wantsEvents() bool                { return false }
func (*cacheAware) metrics(int, float64)             {}
func (*cacheAware) wantsMetrics() bool               { return false }
