package mocker

import (
	"fmt"

	"github.com/kvrouter/kvrouter/kvevents"
)

// tierBlock is a block held by a lower tier: its identity in the prefix
// chain (what a Stored event carries) and its LRU links.
type tierBlock struct {
	hash, local, parent uint64
	pos                 uint32
	hasParent           bool
	pins                int // onboardings reading it; pinned blocks are not evictable
	prev, next          *tierBlock
}

// store is one lower tier (G2, G3 or G4): capacity in blocks, LRU eviction
// of unpinned blocks. Invariant: len(byHash) <= capacity; a block is in
// the LRU iff pins == 0.
type store struct {
	tier       kvevents.Tier
	capacity   int
	byHash     map[uint64]*tierBlock
	head, tail *tierBlock // LRU: head oldest
	lruLen     int
}

func newStore(t kvevents.Tier, capacity int) *store {
	return &store{tier: t, capacity: capacity, byHash: make(map[uint64]*tierBlock)}
}

func (s *store) lruRemove(b *tierBlock) {
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		s.head = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		s.tail = b.prev
	}
	b.prev, b.next = nil, nil
	s.lruLen--
}

func (s *store) lruPush(b *tierBlock) {
	b.prev, b.next = s.tail, nil
	if s.tail != nil {
		s.tail.next = b
	} else {
		s.head = b
	}
	s.tail = b
	s.lruLen++
}

// has reports whether the tier holds h.
func (s *store) has(h uint64) bool { _, ok := s.byHash[h]; return ok }

// pin protects h against eviction; false when absent.
func (s *store) pin(h uint64) bool {
	b, ok := s.byHash[h]
	if !ok {
		return false
	}
	if b.pins == 0 {
		s.lruRemove(b)
	}
	b.pins++
	return true
}

func (s *store) unpin(h uint64) {
	b := s.byHash[h]
	b.pins--
	if b.pins < 0 {
		panic("mocker: tier block unpinned below zero")
	}
	if b.pins == 0 {
		s.lruPush(b)
	}
}

// insert commits blk, evicting the LRU's oldest unpinned blocks as needed
// (appended to evicted). It reports false, changing nothing, when blk is
// already held or every held block is pinned.
func (s *store) insert(blk tierBlock, evicted []tierBlock) (bool, []tierBlock) {
	if s.has(blk.hash) {
		return false, evicted
	}
	if len(s.byHash) >= s.capacity && s.head == nil {
		return false, evicted
	}
	for len(s.byHash) >= s.capacity {
		old := s.head
		s.lruRemove(old)
		delete(s.byHash, old.hash)
		evicted = append(evicted, *old)
	}
	b := blk
	b.prev, b.next, b.pins = nil, nil, 0
	s.byHash[b.hash] = &b
	s.lruPush(&b)
	return true, evicted
}

func (s *store) check() error {
	n := 0
	for b := s.head; b != nil; b = b.next {
		n++
		if b.pins != 0 || s.byHash[b.hash] != b {
			return fmt.Errorf("%s: LRU block %s pinned or not indexed", s.tier, ShortHash(b.hash))
		}
		if n > len(s.byHash) {
			return fmt.Errorf("%s: LRU has a cycle", s.tier)
		}
	}
	pinned := 0
	for _, b := range s.byHash {
		if b.pins > 0 {
			pinned++
		}
	}
	if n != s.lruLen || n+pinned != len(s.byHash) || len(s.byHash) > s.capacity {
		return fmt.Errorf("%s: %d in LRU (count %d) + %d pinned != %d held (capacity %d)",
			s.tier, n, s.lruLen, pinned, len(s.byHash), s.capacity)
	}
	return nil
}

// SharedStore is G4 (DESIGN.md §7): one store per fleet (an object store
// or distributed KV pool) that every engine configured with it offloads
// to and onboards from. It announces its content under its own identity
// (Worker) with storage tier "external"; an engine whose pass changes the
// store returns those events in its StepResult, in the store's own event
// id order.
//
// A SharedStore is not safe for concurrent use: engines sharing it must
// be stepped by one goroutine (the simulator does).
type SharedStore struct {
	st      *store
	link    Link
	worker  kvevents.Worker
	eventID uint64
}

// SharedConfig configures a SharedStore.
type SharedConfig struct {
	// Blocks is the capacity in blocks; must be positive.
	Blocks int
	// Link is each engine's transfer model to and from the store. Default
	// DefaultSharedLink; the zero value means that default.
	Link Link
	// Worker names the store in its KV events. Default zero value.
	Worker kvevents.Worker
}

// NewSharedStore returns an empty store; it panics when cfg.Blocks <= 0
// or the link's bandwidth is not positive.
func NewSharedStore(cfg SharedConfig) *SharedStore {
	if cfg.Link == (Link{}) {
		cfg.Link = DefaultSharedLink
	}
	if cfg.Blocks <= 0 || !(cfg.Link.Bandwidth > 0) {
		panic(fmt.Sprintf("mocker: shared store needs positive blocks and bandwidth, got %d and %v", cfg.Blocks, cfg.Link.Bandwidth))
	}
	return &SharedStore{st: newStore(kvevents.TierExternal, cfg.Blocks), link: cfg.Link, worker: cfg.Worker}
}

// Len is the number of blocks held.
func (s *SharedStore) Len() int { return len(s.st.byHash) }

// Has reports whether the store holds the block of engine hash h.
func (s *SharedStore) Has(h uint64) bool { return s.st.has(h) }

// Worker is the identity of the store's events.
func (s *SharedStore) Worker() kvevents.Worker { return s.worker }
