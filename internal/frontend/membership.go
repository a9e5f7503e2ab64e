package frontend

import (
	"cmp"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/router"
)

var _ discovery.Membership = (*Server)(nil)

// Join adds a discovered worker (discovery.Membership). A worker that
// does not announce its max_num_seqs gets Config.WorkerMaxNumSeqs, one
// that does not announce its max_num_batched_tokens
// Config.WorkerMaxBatchedTokens.
func (s *Server) Join(w discovery.Worker) error {
	role, err := router.ParseRole(w.Role)
	if err != nil {
		return err
	}
	return s.AddWorker(Worker{ID: w.ID, URL: w.URL, BootstrapPort: w.BootstrapPort, NoMetrics: w.Metrics == discovery.MetricsOff,
		FleetBudget: w.MaxBatchedTokens == 0, Info: router.WorkerInfo{
			DPSize: w.DPSize, MaxNumBatchedTokens: cmp.Or(w.MaxBatchedTokens, s.cfg.WorkerMaxBatchedTokens), TotalKVBlocks: w.TotalKVBlocks,
			BlockSize: w.BlockSize, Labels: w.Labels, Role: role, MaxNumSeqs: cmp.Or(w.MaxNumSeqs, s.cfg.WorkerMaxNumSeqs),
		}})
}

// Leave removes a worker that went away (discovery.Membership).
func (s *Server) Leave(id uint64) {
	s.RemoveWorker(id)
	if s.cfg.Events.OnWorkerDown != nil {
		s.cfg.Events.OnWorkerDown(id)
	}
}
