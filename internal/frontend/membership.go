package frontend

import (
	"github.com/kvrouter/kvrouter/internal/discovery"
)

// The Server's membership API hands over to its pool (internal/frontend/pool).

var _ discovery.Membership = (*Server)(nil)

// AddWorker adds (or updates) a worker. A block size different from the
// router's is refused with an error wrapping router.ErrBlockSize.
func (s *Server) AddWorker(w Worker) error { return s.pool.Add(w) }

// RemoveWorker removes a worker from routing, its index entries and loads.
func (s *Server) RemoveWorker(id uint64) { s.pool.Remove(id) }

// Workers returns the known workers sorted by id.
func (s *Server) Workers() []Worker { return s.pool.List() }

// WorkersAt returns the ids of the known workers whose HostPort is one of
// endpoints, in endpoints' order (unknown endpoints are skipped). Its
// cost is linear in the endpoints plus the workers: the list comes from
// the proxy and may be long.
func (s *Server) WorkersAt(endpoints []string) []uint64 { return s.pool.At(endpoints) }

// Join adds a discovered worker (discovery.Membership). A worker that
// does not announce its max_num_seqs gets Config.WorkerMaxNumSeqs, one
// that does not announce its max_num_batched_tokens
// Config.WorkerMaxBatchedTokens.
func (s *Server) Join(w discovery.Worker) error { return s.pool.Join(w) }

// Leave removes a worker that went away (discovery.Membership).
func (s *Server) Leave(id uint64) { s.pool.Leave(id) }
