package frontend

import (
	"context"
	"time"
)

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
