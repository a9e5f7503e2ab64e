package indexer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/kvrouter/kvrouter/kvevents"
)

// ErrClosed is returned by Concurrent's blocking calls once Run has
// returned.
var ErrClosed = errors.New("indexer: concurrent index is not running")

// Concurrent wraps an Index for the event plane (DESIGN.md §3
// Concurrency). FindMatches, AppendMatches, Dump and Stats run inline on the
// caller's goroutine (the wrapped index takes read locks; Flash's lookups
// take none, see flashrcu.go). Apply enqueues
// the event to one of ConcurrentConfig.Writers writer goroutines chosen by a hash of
// the worker+rank (or, when the wrapped index is a Sharded with one shard
// per writer, by the worker's shard, so that each writer owns one shard and
// writers never contend for a lock), so one worker+rank's events are
// applied in enqueue order by one goroutine, and writers never interleave
// one worker's events.
//
// Apply never drops: when the chosen queue is full it blocks until there is
// room (backpressure onto the event source) or Run has returned. Rejections
// are reported through ConcurrentConfig.Events.OnRejected, not by Apply.
//
// The constructor starts no goroutines; Run does. All methods are safe for
// concurrent use. Events enqueued but not applied when Run returns are
// discarded.
type Concurrent struct {
	idx    Index
	events Events
	queues []chan job
	queued atomic.Int64
	// shardOf, when set, picks the queue: the wrapped index is sharded by
	// worker with one shard per writer, so each writer owns one shard.
	shardOf func(kvevents.Worker) int

	once    sync.Once
	started atomic.Bool
	done    chan struct{} // closed when Run returns
}

// job is an event to apply, or a barrier every writer must reach.
type job struct {
	ev      kvevents.Event
	barrier *barrier
}

// A barrier parks every writer: each sends on arrived (buffered for all of
// them, so the send never blocks) and waits for release.
type barrier struct {
	arrived chan struct{}
	release chan struct{}
}

var _ Index = (*Concurrent)(nil)

// NewConcurrent wraps idx. cfg.Writers (default GOMAXPROCS), cfg.QueueSize
// (default 1024 events per writer) and cfg.Events are used.
func NewConcurrent(idx Index, cfg ConcurrentConfig) *Concurrent {
	cfg = cfg.withDefaults()
	c := &Concurrent{idx: idx, events: cfg.Events, done: make(chan struct{})}
	c.queues = make([]chan job, cfg.Writers)
	for i := range c.queues {
		c.queues[i] = make(chan job, cfg.QueueSize)
	}
	if sq, ok := idx.(interface {
		shardQueues() (int, func(kvevents.Worker) int)
	}); ok {
		if n, of := sq.shardQueues(); n == len(c.queues) {
			c.shardOf = of
		}
	}
	return c
}

// Index returns the wrapped index.
func (c *Concurrent) Index() Index { return c.idx }

// Run starts the writer goroutines and blocks until ctx is done, then stops
// them and returns ctx's error. It may be called once; a second call returns
// ErrClosed at once.
func (c *Concurrent) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return ErrClosed
	}
	var wg sync.WaitGroup
	for _, q := range c.queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.writer(ctx, q)
		}()
	}
	<-ctx.Done()
	wg.Wait()
	c.once.Do(func() { close(c.done) })
	return ctx.Err()
}

// A writer applies up to maxBatch events, and stops adding events once the
// batch holds maxBatchBlocks blocks, under one write lock, so that readers
// wait for at most about one 16-block event's work. Measured with
// BenchmarkConcurrent (flash, 16-block events, busy 2-core machine):
// batching 32 events with no block bound cut mode=write from ~1050 to ~900
// ns/event but roughly doubled mode=mixed's lookup p99 at -cpu 2 (readers
// parked behind long write holds); the block bound keeps the per-lock
// saving for the small events engines mostly send (1-block removes, short
// stores) without lengthening holds.
const (
	maxBatch       = 32
	maxBatchBlocks = 16
)

// batchApplier is implemented by indexes that can apply several events
// under one lock acquisition (Flash, Radix). errs[i] is the outcome of
// evs[i], exactly as Apply would return it.
type batchApplier interface {
	applyBatch(evs []kvevents.Event, errs []error)
}

func (c *Concurrent) writer(ctx context.Context, q chan job) {
	ba, _ := c.idx.(batchApplier)
	var (
		batch [maxBatch]kvevents.Event
		errs  [maxBatch]error
	)
	for {
		var j job
		select {
		case <-ctx.Done():
			return
		case j = <-q:
		}
		// Drain what is already queued (up to maxBatch events, stopping
		// at a barrier) and apply it under one lock: a write lock per
		// event costs readers and writers a handoff each.
		n, blocks := 0, 0
		for j.barrier == nil {
			batch[n] = j.ev
			n++
			blocks += len(j.ev.Blocks) + len(j.ev.Hashes)
			if n == maxBatch || blocks >= maxBatchBlocks {
				j = job{}
				break
			}
			select {
			case j = <-q:
				continue
			default:
				j = job{}
			}
			break
		}
		if n > 0 {
			if ba != nil {
				ba.applyBatch(batch[:n], errs[:n])
			} else {
				for i := range batch[:n] {
					errs[i] = c.idx.Apply(&batch[i])
				}
			}
			c.queued.Add(int64(-n))
			for i := range batch[:n] {
				if errs[i] != nil {
					if c.events.OnRejected != nil {
						c.events.OnRejected(&batch[i], errs[i])
					}
				} else if c.events.OnApplied != nil {
					c.events.OnApplied(&batch[i])
				}
			}
			clear(batch[:n]) // drop references to event slices
			clear(errs[:n])
		}
		if j.barrier != nil {
			j.barrier.arrived <- struct{}{}
			select {
			case <-j.barrier.release:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (c *Concurrent) queueOf(w kvevents.Worker) chan job {
	if len(c.queues) == 1 {
		return c.queues[0]
	}
	if c.shardOf != nil {
		return c.queues[c.shardOf(w)]
	}
	// SplitMix64 finalizer: spreads sequential worker ids evenly.
	h := w.ID ^ uint64(w.Rank)<<32 ^ uint64(w.Rank)
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return c.queues[h%uint64(len(c.queues))]
}

// Apply enqueues a copy of *ev (its slices are shared: do not modify them
// afterwards) and returns nil, blocking while the worker's queue is full. It
// returns ErrClosed once Run has returned. Before Run starts, events queue
// up to the queues' capacity.
func (c *Concurrent) Apply(ev *kvevents.Event) error {
	select {
	case <-c.done:
		return ErrClosed
	default:
	}
	q := c.queueOf(ev.Worker())
	c.queued.Add(1)
	select {
	case q <- job{ev: *ev}:
		return nil
	case <-c.done:
		c.queued.Add(-1)
		return ErrClosed
	}
}

// Flush blocks until every event enqueued before the call has been applied
// (or rejected), ctx is done, or Run has returned.
func (c *Concurrent) Flush(ctx context.Context) error {
	return c.stopTheWorld(ctx, nil)
}

// stopTheWorld sends a barrier to every writer, waits for all to reach it
// (everything enqueued before is then applied), runs fn with the writers
// parked, and releases them.
func (c *Concurrent) stopTheWorld(ctx context.Context, fn func()) error {
	b := &barrier{arrived: make(chan struct{}, len(c.queues)), release: make(chan struct{})}
	defer close(b.release)
	for _, q := range c.queues {
		select {
		case q <- job{barrier: b}:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return ErrClosed
		}
	}
	for range c.queues {
		select {
		case <-b.arrived:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return ErrClosed
		}
	}
	if fn != nil {
		fn()
	}
	return nil
}

// RemoveWorker drops every rank of worker id after every event enqueued
// before the call (it parks the writers meanwhile). When Run is not running
// it removes immediately.
func (c *Concurrent) RemoveWorker(id uint64) {
	if !c.started.Load() {
		c.idx.RemoveWorker(id)
		return
	}
	if err := c.stopTheWorld(context.Background(), func() { c.idx.RemoveWorker(id) }); err != nil {
		c.idx.RemoveWorker(id)
	}
}

// FindMatches implements Index, inline.
func (c *Concurrent) FindMatches(locals []uint64) Overlaps { return c.idx.FindMatches(locals) }

// AppendMatches appends the FindMatches result to dst, without allocating
// when the wrapped index supports it (Radix, Flash).
func (c *Concurrent) AppendMatches(dst Overlaps, locals []uint64) Overlaps {
	if a, ok := c.idx.(interface {
		AppendMatches(Overlaps, []uint64) Overlaps
	}); ok {
		return a.AppendMatches(dst, locals)
	}
	return append(dst, c.idx.FindMatches(locals)...)
}

// AppendMatchesIDs implements IDMatchAppender: the wrapped index's, or
// its AppendMatches.
func (c *Concurrent) AppendMatchesIDs(dst Overlaps, locals, ids []uint64) Overlaps {
	if a, ok := c.idx.(IDMatchAppender); ok {
		return a.AppendMatchesIDs(dst, locals, ids)
	}
	return c.AppendMatches(dst, locals)
}

// WantsIDs implements IDMatchAppender: whether the wrapped index reads
// the ids.
func (c *Concurrent) WantsIDs() bool {
	a, ok := c.idx.(IDMatchAppender)
	return ok && a.WantsIDs()
}

// Dump implements Index, inline; call Flush first for a dump that includes
// everything enqueued.
func (c *Concurrent) Dump() []kvevents.Event { return c.idx.Dump() }

// Stats returns the wrapped index's stats with Queued set.
func (c *Concurrent) Stats() Stats {
	s := c.idx.Stats()
	s.Queued = int(c.queued.Load())
	return s
}
