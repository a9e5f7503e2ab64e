package mockerd

import (
	"context"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
)

// Lower KV tiers in the real-time mocker (DESIGN.md §7). The engine core
// runs the offload pipeline and onboarding on its clock (time since Run
// started); the loop here adds what a real process needs:
//
//   - an idle engine still commits its offloads: when no request runs the
//     loop sleeps until the pipeline's next due time (Engine.NextOffload)
//     and advances it;
//   - a G4 store shared by several servers of one process (kvrouter up)
//     is one mocker.SharedStore: every engine call that may touch it runs
//     under Config.SharedLock, and its events, which carry the store's own
//     identity and event ids, go to Config.SharedSinks while the lock is
//     held, so the store's events reach the event plane in id order
//     whichever engine produced them. A G4 store cannot span processes:
//     its content lives in this process's memory.

// shared reports whether this server's engine shares a G4 store under a
// lock.
func (s *Server) shared() bool {
	return s.cfg.SharedLock != nil && s.cfg.Engine.Tiers.Shared != nil
}

func (s *Server) lockShared() {
	if s.shared() {
		s.cfg.SharedLock.Lock()
	}
}

func (s *Server) unlockShared() {
	if s.shared() {
		s.cfg.SharedLock.Unlock()
	}
}

func (s *Server) engAdd(req mocker.Request) error {
	s.lockShared()
	defer s.unlockShared()
	return s.eng.Add(req)
}

func (s *Server) engCancel(id uint64) mocker.Result {
	s.lockShared()
	defer s.unlockShared()
	res, _ := s.eng.Cancel(id)
	return res
}

// engStep runs one pass; the shared store's events are published (to
// SharedSinks) before the lock drops.
func (s *Server) engStep(ctx context.Context, now time.Duration, bt *blockTokens) mocker.StepResult {
	s.lockShared()
	defer s.unlockShared()
	res := s.eng.Step(now)
	s.publishStore(ctx, res.Events, bt)
	return res
}

// engAdvance runs an idle engine's offload pipeline up to now and
// publishes what it produced.
func (s *Server) engAdvance(ctx context.Context, now time.Duration, bt *blockTokens) {
	s.lockShared()
	evs := s.eng.Advance(now)
	s.publishStore(ctx, evs, bt)
	s.unlockShared()
	for i := range evs {
		if !s.storeEvent(&evs[i]) {
			s.publish(ctx, &evs[i], bt)
		}
	}
	st := s.eng.Stats()
	s.stats.Store(&st)
}

// storeEvent reports whether ev is the shared store's, published apart
// (SharedSinks) by publishStore.
func (s *Server) storeEvent(ev *kvevents.Event) bool {
	return len(s.cfg.SharedSinks) > 0 && s.cfg.Engine.Tiers.Shared != nil &&
		ev.Tier == kvevents.TierExternal && ev.Worker() == s.cfg.Engine.Tiers.Shared.Worker()
}

// publishStore publishes the shared store's events of evs to SharedSinks
// (and ZMQ, as this worker's EXTERNAL-medium events).
func (s *Server) publishStore(ctx context.Context, evs []kvevents.Event, bt *blockTokens) {
	for i := range evs {
		ev := &evs[i]
		if !s.storeEvent(ev) {
			continue
		}
		s.publishZMQ(ev, bt)
		for _, sink := range s.cfg.SharedSinks {
			if err := sink.Publish(ctx, *ev); err != nil {
				s.pubErr.Add(1)
				if ctx.Err() == nil {
					s.log.Warn("publish shared-store KV event", "event_id", ev.EventID, "err", err)
				}
			}
		}
		s.pubs.Add(1)
	}
}

// idleWait returns a channel that fires when an idle engine's offload
// pipeline has work due (nil when it has none) and a stop function.
func (s *Server) idleWait(start time.Time) (<-chan time.Time, func()) {
	t, ok := s.eng.NextOffload()
	if !ok {
		return nil, func() {}
	}
	tm := time.NewTimer(max(0, time.Until(start.Add(t))))
	return tm.C, func() { tm.Stop() }
}

// Medium is the vLLM KV-event "medium" string of tier t, as the mocker
// publishes it on ZMQ: vLLM's offloading connector names its specs "GPU"
// and "CPU"; a disk tier "DISK" and the shared store "EXTERNAL" follow
// SGLang's HiCache names (vLLM has none fixed for them).
// kvevents.MediumTier maps each back to t.
func Medium(t kvevents.Tier) string {
	switch t {
	case kvevents.TierHostPinned:
		return "CPU"
	case kvevents.TierDisk:
		return "DISK"
	case kvevents.TierExternal:
		return "EXTERNAL"
	}
	return "GPU"
}
