package queue

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Policy orders waiting requests.
type Policy uint8

const (
	// FCFS ranks by priority - arrival (seconds), larger first.
	FCFS Policy = iota
	// WSPT ranks by (1 + priority) / max(1, uncached_tokens), larger first.
	WSPT
)

func (p Policy) String() string {
	switch p {
	case FCFS:
		return "fcfs"
	case WSPT:
		return "wspt"
	}
	return fmt.Sprintf("policy(%d)", p)
}

// ParsePolicy parses "fcfs" or "wspt".
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "fcfs":
		return FCFS, nil
	case "wspt":
		return WSPT, nil
	}
	return 0, fmt.Errorf("queue: unknown policy %q (want fcfs or wspt)", s)
}

// ErrFull is returned by Push on a full queue.
var ErrFull = errors.New("queue: full")

// Item is one waiting request.
type Item[T any] struct {
	ID       string
	Priority float64
	Arrival  time.Time
	// Uncached is the request's uncached prompt tokens (WSPT's weight).
	Uncached int
	Value    T

	key float64
	seq uint64
	idx int
}

// Key returns the item's rank under the queue's policy (larger first).
func (it *Item[T]) Key() float64 { return it.key }

// Queue is a bounded priority queue. Build with New.
type Queue[T any] struct {
	policy Policy
	cap    int
	h      itemHeap[T]
	byID   map[string]*Item[T]
	seq    uint64
	epoch  time.Time
	hasEp  bool
}

// New returns an empty queue holding at most capacity items (capacity <= 0
// means unbounded).
func New[T any](policy Policy, capacity int) *Queue[T] {
	return &Queue[T]{policy: policy, cap: capacity, byID: make(map[string]*Item[T])}
}

// Key computes the rank of a request under policy p; FCFS measures arrival
// in seconds since epoch.
func Key(p Policy, priority float64, arrival, epoch time.Time, uncached int) float64 {
	if p == WSPT {
		return (1 + priority) / float64(max(1, uncached))
	}
	return priority - arrival.Sub(epoch).Seconds()
}

// Push adds an item. It fails with ErrFull when the queue is at capacity,
// and with an error when the id is already queued.
func (q *Queue[T]) Push(it Item[T]) error {
	if q.cap > 0 && len(q.h) >= q.cap {
		return fmt.Errorf("%w: %d requests waiting", ErrFull, len(q.h))
	}
	if _, ok := q.byID[it.ID]; ok {
		return fmt.Errorf("queue: request %q already queued", it.ID)
	}
	if !q.hasEp {
		// NB: keys are relative to the first arrival so float64 seconds
		// keep sub-microsecond resolution.
		q.epoch, q.hasEp = it.Arrival, true
	}
	p := &it
	p.key = Key(q.policy, it.Priority, it.Arrival, q.epoch, it.Uncached)
	if math.IsNaN(p.key) {
		return fmt.Errorf("queue: request %q has a NaN rank", it.ID)
	}
	q.seq++
	p.seq = q.seq
	heap.Push(&q.h, p)
	q.byID[it.ID] = p
	return nil
}

// Peek returns the best item without removing it.
func (q *Queue[T]) Peek() (*Item[T], bool) {
	if len(q.h) == 0 {
		return nil, false
	}
	return q.h[0], true
}

// Pop removes and returns the best item.
func (q *Queue[T]) Pop() (Item[T], bool) {
	if len(q.h) == 0 {
		return Item[T]{}, false
	}
	p := heap.Pop(&q.h).(*Item[T])
	delete(q.byID, p.ID)
	return *p, true
}

// Remove drops the item with id (a cancelled waiting request).
func (q *Queue[T]) Remove(id string) (Item[T], bool) {
	p, ok := q.byID[id]
	if !ok {
		return Item[T]{}, false
	}
	heap.Remove(&q.h, p.idx)
	delete(q.byID, id)
	return *p, true
}

// Contains reports whether id is waiting.
func (q *Queue[T]) Contains(id string) bool { _, ok := q.byID[id]; return ok }

// Len is the number of waiting items.
func (q *Queue[T]) Len() int { return len(q.h) }

// Cap is the capacity (<= 0: unbounded).
func (q *Queue[T]) Cap() int { return q.cap }

// Policy returns the queue's order.
func (q *Queue[T]) Policy() Policy { return q.policy }

// IDs returns the waiting ids in release order (best first).
func (q *Queue[T]) IDs() []string {
	c := make(itemHeap[T], len(q.h))
	copy(c, q.h)
	ids := make([]string, 0, len(c))
	for len(c) > 0 {
		ids = append(ids, heap.Pop(&c).(*Item[T]).ID)
	}
	// Restore the indexes the copy's pops disturbed.
	for i, p := range q.h {
		p.idx = i
	}
	return ids
}

// String prints the waiting ids in release order with their keys.
func (q *Queue[T]) String() string {
	if len(q.h) == 0 {
		return "queue: empty\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "queue (%s, %d/%d):", q.policy, len(q.h), q.cap)
	for _, id := range q.IDs() {
		fmt.Fprintf(&b, " %s(%.4g)", id, q.byID[id].key)
	}
	b.WriteByte('\n')
	return b.String()
}

type itemHeap[T any] []*Item[T]

func (h itemHeap[T]) Len() int { return len(h) }
func (h itemHeap[T]) Less(i, j int) bool {
	if h[i].key != h[j].key {
		return h[i].key > h[j].key
	}
	return h[i].seq < h[j].seq
}
func (h itemHeap[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *itemHeap[T]) Push(x any) {
	p := x.(*Item[T])
	p.idx = len(*h)
	*h = append(*h, p)
}
func (h *itemHeap[T]) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}
