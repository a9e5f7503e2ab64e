package router

import (
	"fmt"

	"github.com/kvrouter/kvrouter/selector"
)

// SetWorkerTiming sets the timing model the time cost (selector.CostTime)
// uses for every rank of worker id, in place of Config.Selector.Timing:
// a model fitted to that worker (selector.TimingFit, fed by the shell from
// observed latencies). The zero Timing clears it. It survives AddWorker
// updates of the same id and goes with RemoveWorker.
func (r *Router) SetWorkerTiming(id uint64, t selector.Timing) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("%w: worker %d: %w", ErrBadWorker, id, err)
	}
	r.mu.Lock() // no load or prediction read: needs no settle
	defer r.mu.Unlock()
	ws := r.workers[id]
	if ws == nil {
		return fmt.Errorf("%w: %d", ErrUnknownWorker, id)
	}
	// A fresh pointer: candidates built earlier keep the one they read.
	if t.IsZero() {
		ws.timing = nil
	} else {
		ws.timing = &t
	}
	return nil
}

// WorkerTiming returns worker id's own timing model and true, or false
// when it has none (it uses Config.Selector.Timing).
func (r *Router) WorkerTiming(id uint64) (selector.Timing, bool) {
	r.mu.Lock() // no load or prediction read: needs no settle
	defer r.mu.Unlock()
	if ws := r.workers[id]; ws != nil && ws.timing != nil {
		return *ws.timing, true
	}
	return selector.Timing{}, false
}
