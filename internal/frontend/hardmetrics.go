package frontend

// CountWorkerRefused counts a refused worker registration by reason
// (kvrouter_workers_refused_total; discovery.Fleet.OnRefused).
func (s *Server) CountWorkerRefused(reason string) {
	s.m.workerRefused.WithLabelValues(reason).Inc()
}
