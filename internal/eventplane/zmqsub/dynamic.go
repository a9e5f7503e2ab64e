package zmqsub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/kvrouter/kvrouter/kvevents"
)

// dynSource is a connect-topology source added at run time (Add): pods a
// discovery finds, dialled while they are members.
type dynSource struct {
	src    Source
	cancel context.CancelFunc // nil until dialled
	wg     sync.WaitGroup     // its rank loops
}

// dynamic is the Subscriber's run-time source table.
type dynamic struct {
	mu      sync.Mutex
	ctx     context.Context // Run's; nil before Run and after it ends
	wg      sync.WaitGroup  // every rank loop started under ctx
	sources map[uint64]*dynSource
	stopped bool // Run ended
}

// ErrStopped is returned by Add after Run has ended.
var ErrStopped = errors.New("zmqsub: subscriber stopped")

// Add dials src's ranks (connect topology) until Remove(src.WorkerID) or
// the end of Run; added before Run, it is dialled when Run starts. A
// worker id added again with another endpoint is redialled (its
// sequence state dropped: a new address is a new publisher); with the
// same source, Add does nothing. Safe for concurrent use.
func (s *Subscriber) Add(src Source) error {
	if _, _, err := splitEndpoint(src.Endpoint); err != nil {
		return err
	}
	if src.Replay != "" {
		if _, _, err := splitEndpoint(src.Replay); err != nil {
			return err
		}
	}
	src.DPSize = max(src.DPSize, 1)
	d := &s.dyn
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return ErrStopped
	}
	if d.sources == nil {
		d.sources = map[uint64]*dynSource{}
	}
	if old, ok := d.sources[src.WorkerID]; ok {
		if old.src == src {
			return nil
		}
		s.stopSource(old)
	}
	ds := &dynSource{src: src}
	d.sources[src.WorkerID] = ds
	if d.ctx != nil {
		s.dial(ds)
	}
	return nil
}

// Remove stops dialling worker's source (added with Add) and drops its
// sequence state; it returns once the worker's sockets are closed. An
// unknown worker is a no-op.
func (s *Subscriber) Remove(worker uint64) {
	d := &s.dyn
	d.mu.Lock()
	defer d.mu.Unlock()
	if ds, ok := d.sources[worker]; ok {
		delete(d.sources, worker)
		s.stopSource(ds)
	}
}

// Sources returns the sources added with Add and not removed, by worker
// id.
func (s *Subscriber) Sources() []Source {
	d := &s.dyn
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Source, 0, len(d.sources))
	for _, ds := range d.sources {
		out = append(out, ds.src)
	}
	slices.SortFunc(out, func(a, b Source) int {
		switch {
		case a.WorkerID < b.WorkerID:
			return -1
		case a.WorkerID > b.WorkerID:
			return 1
		}
		return 0
	})
	return out
}

// startDynamic dials the sources added before Run (d.mu not held).
func (s *Subscriber) startDynamic(ctx context.Context) {
	d := &s.dyn
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ctx = ctx
	if d.sources == nil {
		d.sources = map[uint64]*dynSource{}
	}
	for _, ds := range d.sources {
		s.dial(ds)
	}
}

// stopDynamic ends the run-time sources once ctx is done: no Add dials
// after it, and it returns when their loops have.
func (s *Subscriber) stopDynamic() {
	d := &s.dyn
	d.mu.Lock()
	d.ctx, d.stopped = nil, true
	d.mu.Unlock()
	d.wg.Wait()
}

// dial starts ds's rank loops under Run's context (d.mu held).
func (s *Subscriber) dial(ds *dynSource) {
	ctx, cancel := context.WithCancel(s.dyn.ctx)
	ds.cancel = cancel
	src := ds.src
	for r := range src.DPSize {
		ep, _ := RankEndpoint(src.Endpoint, r)
		ds.wg.Add(1)
		s.dyn.wg.Add(1)
		go func() {
			defer s.dyn.wg.Done()
			defer ds.wg.Done()
			sub, err := s.dialSub(ctx, ep)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("zmq dial", "worker", src.WorkerID, "endpoint", ep, "err", fmt.Errorf("zmqsub: %w", err))
				}
				return
			}
			s.loop(ctx, sub, &src, uint32(r))
		}()
	}
}

// stopSource closes ds's sockets, waits for its loops and drops the
// sequence state of its ranks (d.mu held).
func (s *Subscriber) stopSource(ds *dynSource) {
	if ds.cancel != nil {
		ds.cancel()
		ds.wg.Wait()
	}
	s.mu.Lock()
	for r := range ds.src.DPSize {
		delete(s.pubs, pubKey{worker: kvevents.Worker{ID: ds.src.WorkerID, Rank: uint32(r)}})
	}
	s.mu.Unlock()
}
