package mocker

// pool is the block pool: physical blocks that are free, active
// (refcount > 0) or inactive (refcount 0, cached, in the LRU).
//
// Invariant: free + lruLen + active == len(blocks); a block is cached iff
// byHash maps its hash to it; every LRU block is cached with ref 0.
type pool struct {
	blocks []block
	free   []int32 // stack of free (uncached, unreferenced) blocks
	// LRU of inactive cached blocks, linked through block.prev/next;
	// head is the oldest (evicted first).
	head, tail int32
	lruLen     int
	active     int
	byHash     map[uint64]int32
}

type block struct {
	hash       uint64 // engine sequence hash, when cached
	local      uint64 // local hash, when cached
	parent     uint64 // previous block's engine hash, when cached and pos > 0
	pos        uint32 // block index in its sequence, when cached
	uses       int32  // prefix hits since cached (the offload policy screen)
	ref        int32
	cached     bool
	prev, next int32 // LRU links, -1 at the ends
}

const none = -1

func newPool(n int) pool {
	p := pool{
		blocks: make([]block, n),
		free:   make([]int32, n),
		head:   none,
		tail:   none,
		byHash: make(map[uint64]int32),
	}
	// Hand out low block ids first (nicer test output).
	for i := range p.free {
		p.free[i] = int32(n - 1 - i)
		p.blocks[i].prev, p.blocks[i].next = none, none
	}
	return p
}

// capacity is the number of blocks an allocation can obtain: free plus
// evictable.
func (p *pool) capacity() int { return len(p.free) + p.lruLen }

func (p *pool) lruRemove(b int32) {
	bl := &p.blocks[b]
	if bl.prev != none {
		p.blocks[bl.prev].next = bl.next
	} else {
		p.head = bl.next
	}
	if bl.next != none {
		p.blocks[bl.next].prev = bl.prev
	} else {
		p.tail = bl.prev
	}
	bl.prev, bl.next = none, none
	p.lruLen--
}

func (p *pool) lruPush(b int32) {
	bl := &p.blocks[b]
	bl.prev, bl.next = p.tail, none
	if p.tail != none {
		p.blocks[p.tail].next = b
	} else {
		p.head = b
	}
	p.tail = b
	p.lruLen++
}

// acquire adds a reference to a cached block, reviving it from the LRU.
func (p *pool) acquire(b int32) {
	bl := &p.blocks[b]
	if bl.ref == 0 {
		p.lruRemove(b)
		p.active++
	}
	bl.ref++
}

// release drops a reference; at zero a cached block joins the LRU's young
// end and an uncached one becomes free.
func (p *pool) release(b int32) {
	bl := &p.blocks[b]
	bl.ref--
	if bl.ref > 0 {
		return
	}
	if bl.ref < 0 {
		panic("mocker: block refcount below zero")
	}
	p.active--
	if bl.cached {
		p.lruPush(b)
	} else {
		p.free = append(p.free, b)
	}
}

// take returns a block with refcount 1, from the free stack or else by
// evicting the LRU's oldest block; evicted reports the evicted block's hash.
// The caller checks capacity first.
func (p *pool) take() (b int32, evicted block, didEvict bool) {
	if n := len(p.free); n > 0 {
		b = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		b = p.head
		if b == none {
			panic("mocker: take from an exhausted pool")
		}
		p.lruRemove(b)
		bl := &p.blocks[b]
		evicted, didEvict = *bl, true
		delete(p.byHash, bl.hash)
		bl.cached, bl.hash, bl.local, bl.parent, bl.pos, bl.uses = false, 0, 0, 0, 0, 0
	}
	p.blocks[b].ref = 1
	p.active++
	return b, evicted, didEvict
}

// cache registers an active uncached block under hash, at position pos of
// its sequence (parent is the previous block's hash, when pos > 0).
func (p *pool) cache(b int32, hash, local, parent uint64, pos uint32) {
	bl := &p.blocks[b]
	bl.cached, bl.hash, bl.local, bl.parent, bl.pos, bl.uses = true, hash, local, parent, pos, 0
	p.byHash[hash] = b
}
