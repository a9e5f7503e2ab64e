package tokenizer

import (
	"container/list"
	"sync"

	"github.com/zeebo/xxh3"
)

// CacheStats is a snapshot of the segment cache counters.
type CacheStats struct {
	Hits, Misses uint64
	Entries      int
	Bytes        int64 // accounted bytes (segment text length + 4 per id + overhead)
}

// segKey identifies a segment by a 128-bit hash of its raw text.
// NB: 128 bits make an accidental collision (which would return wrong ids)
// negligible (~n²/2¹²⁹) for any cache size that fits in memory.
type segKey = xxh3.Uint128

func segmentKey(s string) segKey { return xxh3.HashString128(s) }

// segmentCache is an LRU of segment ids bounded by accounted bytes.
// Safe for concurrent use (one mutex; a hit costs a map lookup, a list move
// and a copy by the caller).
type segmentCache struct {
	mu           sync.Mutex
	max          int64
	bytes        int64
	lru          list.List // front = most recent; values are *cacheEntry
	m            map[segKey]*list.Element
	hits, misses uint64
}

type cacheEntry struct {
	key  segKey
	ids  []uint32
	cost int64
}

const entryOverhead = 96 // map + list element + entry header, approximately

func newSegmentCache(maxBytes int64) *segmentCache {
	return &segmentCache{max: maxBytes, m: make(map[segKey]*list.Element)}
}

// get returns the cached ids; the caller must not modify them.
func (c *segmentCache) get(k segKey) ([]uint32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		c.misses++
		return nil, false
	}
	c.hits++
	c.lru.MoveToFront(e)
	return e.Value.(*cacheEntry).ids, true
}

// put stores a copy of ids for a segment of textLen bytes.
func (c *segmentCache) put(k segKey, ids []uint32, textLen int) {
	cost := int64(textLen) + 4*int64(len(ids)) + entryOverhead
	if cost > c.max/4 { // one huge segment must not flush the whole cache
		return
	}
	own := append([]uint32(nil), ids...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return
	}
	c.m[k] = c.lru.PushFront(&cacheEntry{key: k, ids: own, cost: cost})
	c.bytes += cost
	for c.bytes > c.max {
		back := c.lru.Back()
		ent := back.Value.(*cacheEntry)
		c.lru.Remove(back)
		delete(c.m, ent.key)
		c.bytes -= ent.cost
	}
}

func (c *segmentCache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Hits: c.hits, Misses: c.misses, Entries: len(c.m), Bytes: c.bytes}
}
