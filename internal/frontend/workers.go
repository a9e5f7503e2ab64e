package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
)

// markDown takes an unreachable worker out of routing: the router drops its
// index entries and loads. The load poller brings it back when it answers.
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
	s.log.Info("worker back", "worker", id)
	if s.cfg.Events.OnWorkerUp != nil {
		s.cfg.Events.OnWorkerUp(id)
	}
}

// workerLoad is the part of a worker's GET /load report the router uses
// (mockerd.Load).
type workerLoad struct {
	WorkerID            uint64  `json:"worker_id"`
	DPRank              uint32  `json:"dp_rank"`
	KVUsage             float64 `json:"kv_usage"`
	ActivePrefillTokens int     `json:"active_prefill_tokens"`
}

func (s *Server) pollLoads(ctx context.Context) {
	t := time.NewTicker(s.cfg.LoadPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ws := s.Workers()
		var wg sync.WaitGroup
		for i := range ws {
			wg.Add(1)
			go func(w *Worker) {
				defer wg.Done()
				pctx, cancel := context.WithTimeout(ctx, s.cfg.LoadPollInterval*4)
				defer cancel()
				l, err := s.fetchLoad(pctx, w.URL)
				if err != nil {
					return
				}
				if w.down {
					s.markUp(w.ID)
				}
				_ = s.rt.UpdateWorkerMetrics(kvevents.Worker{ID: w.ID, Rank: l.DPRank}, router.Metrics{KVUsage: min(max(l.KVUsage, 0), 1)})
				s.m.workerKV.WithLabelValues(fmt.Sprint(w.ID)).Set(l.KVUsage)
				s.m.workerPrefill.WithLabelValues(fmt.Sprint(w.ID)).Set(float64(l.ActivePrefillTokens))
			}(&ws[i])
		}
		wg.Wait()
	}
}

func (s *Server) fetchLoad(ctx context.Context, base string) (workerLoad, error) {
	var l workerLoad
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/load", nil)
	if err != nil {
		return l, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return l, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return l, fmt.Errorf("frontend: %s/load: %s", base, resp.Status)
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&l)
	return l, err
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
