package sim

// computeBounds returns the infinite-cache and pooled-LRU hit rates of the
// prepared requests, replayed in arrival order at block granularity.
//
// Both count, per request, the leading full prompt blocks already cached,
// capped so that at least one prompt token is computed (the engines do the
// same: a fully cached prompt still computes its last token).
//
// The pooled cache is one LRU of capacity blocks (the whole fleet's KV
// blocks). A request's blocks are touched from last to first, so its prefix
// is the most recently used and its tail is evicted first, as the engines
// free blocks in reverse order. It holds prompt blocks only: no output
// blocks, and no room reserved for running requests, so it is the hit rate
// of a fleet whose caches were pooled, not a strict upper bound (LRU is not
// optimal).
func computeBounds(p *prepared, B, capacity int) Bounds {
	b := Bounds{PooledCapacity: capacity}
	seen := make(map[uint64]struct{})
	lru := newLRU(capacity)
	for i := range p.reqs {
		r := &p.reqs[i]
		n := len(r.seq)
		b.Blocks += int64(n)
		limit := (r.isl - 1) / B // most blocks that can hit
		inf := 0
		for _, h := range r.seq {
			if _, ok := seen[h]; !ok {
				break
			}
			inf++
		}
		for _, h := range r.seq[inf:] {
			seen[h] = struct{}{}
		}
		b.InfiniteHits += int64(min(inf, limit))
		pooled := 0
		for _, h := range r.seq {
			if !lru.contains(h) {
				break
			}
			pooled++
		}
		b.PooledHits += int64(min(pooled, limit))
		for k := n - 1; k >= 0; k-- {
			lru.touch(r.seq[k])
		}
	}
	if b.Blocks > 0 {
		b.InfiniteHitRate = float64(b.InfiniteHits) / float64(b.Blocks)
		b.PooledHitRate = float64(b.PooledHits) / float64(b.Blocks)
	}
	return b
}

// lru is a fixed-capacity LRU set of hashes: an intrusive doubly linked
// list over a slice, indexed by a map.
type lru struct {
	idx        map[uint64]int32
	nodes      []lnode
	head, tail int32 // head = most recent; -1 when empty
	capacity   int
}

type lnode struct {
	h          uint64
	prev, next int32
}

func newLRU(capacity int) *lru {
	return &lru{idx: make(map[uint64]int32, capacity), head: -1, tail: -1, capacity: capacity}
}

func (l *lru) contains(h uint64) bool { _, ok := l.idx[h]; return ok }

func (l *lru) unlink(i int32) {
	n := &l.nodes[i]
	if n.prev >= 0 {
		l.nodes[n.prev].next = n.next
	} else {
		l.head = n.next
	}
	if n.next >= 0 {
		l.nodes[n.next].prev = n.prev
	} else {
		l.tail = n.prev
	}
}

func (l *lru) pushFront(i int32) {
	n := &l.nodes[i]
	n.prev, n.next = -1, l.head
	if l.head >= 0 {
		l.nodes[l.head].prev = i
	}
	l.head = i
	if l.tail < 0 {
		l.tail = i
	}
}

// touch makes h the most recently used, inserting it (and evicting the
// least recently used when full).
func (l *lru) touch(h uint64) {
	if l.capacity <= 0 {
		return
	}
	if i, ok := l.idx[h]; ok {
		l.unlink(i)
		l.pushFront(i)
		return
	}
	var i int32
	if len(l.nodes) < l.capacity {
		i = int32(len(l.nodes))
		l.nodes = append(l.nodes, lnode{})
	} else {
		i = l.tail
		l.unlink(i)
		delete(l.idx, l.nodes[i].h)
	}
	l.nodes[i].h = h
	l.idx[h] = i
	l.pushFront(i)
}
