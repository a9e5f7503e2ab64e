package frontend

import (
	"context"
	"time"
)

// markDown takes an unreachable worker out of routing: the router drops its
// index entries and loads. The poller probes it with backoff and brings it back when
// its /health answers (engine.go).
func (s *Server) markDown(id uint64) {
	s.mu.Lock()
	w, ok := s.workers[id]
	if !ok || w.down {
		s.mu.Unlock()
		return
	}
	w.down = true
	s.mu.Unlock()
	s.rt.RemoveWorker(id)
	s.m.workerDown.Inc()
	s.log.Warn("worker down", "worker", id, "url", w.URL)
	if s.cfg.Events.OnWorkerDown != nil {
		s.cfg.Events.OnWorkerDown(id)
	}
}

func (s *Server) markUp(id uint64) {
	s.mu.Lock()
	w, ok := s.workers[id]
	if !ok || !w.down {
		s.mu.Unlock()
		return
	}
	info := w.Info
	s.mu.Unlock()
	if err := s.rt.AddWorker(info); err != nil {
		s.log.Warn("re-add worker", "worker", id, "err", err)
		return
	}
	s.mu.Lock()
	if w, ok := s.workers[id]; ok {
		w.down = false
	}
	s.mu.Unlock()
	s.resetSelfTest(id) // maybe a new engine
	s.log.Info("worker back", "worker", id)
	if s.cfg.Events.OnWorkerUp != nil {
		s.cfg.Events.OnWorkerUp(id)
	}
}

func (s *Server) kickRelease() {
	if s.cfg.Router.Queue.Threshold <= 0 {
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// releaseLoop dispatches queued requests whenever load drops (kick) and at
// least every 20ms.
func (s *Server) releaseLoop(ctx context.Context) {
	if s.cfg.Router.Queue.Threshold <= 0 {
		return
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
		if s.rt.Pending() == 0 {
			continue
		}
		for _, rel := range s.rt.Release(time.Now()) {
			s.waitMu.Lock()
			ch := s.waiters[rel.Decision.RequestID]
			s.waitMu.Unlock()
			if ch != nil {
				ch <- rel
			} else if rel.Err == nil {
				_ = s.rt.Free(rel.Decision.RequestID, time.Now())
			}
		}
	}
}
