package frontend

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/prometheus/client_golang/prometheus"
)

// pool is the frontend's engine membership: the workers it knows, which
// of them are up, and what their polls say (engine.go: load, health,
// block size; adapters.go: LoRA adapters; budget.go: SGLang budgets;
// selftest.go: each engine's tokenizer self-test). It keeps the router's
// worker list in step (fleetRouter). The proxy reads it (get, candidates,
// forwardIDs) and reports unreachable workers (markDown).
//
// A pool is safe for concurrent use.
type pool struct {
	cfg      *Config // read only
	log      *slog.Logger
	client   *http.Client
	rt       fleetRouter
	m        *poolMetrics
	eng      *engineState // per-worker health (engine.go), shared with the self-test
	adapters *adapterSet  // LoRA adapters, configured and learnt by the polls (adapters.go)

	mu      sync.RWMutex
	workers map[uint64]*Worker
	ids     []uint64 // sorted
}

// fleetRouter is the router's worker list as the pool keeps it
// (*router.Router).
type fleetRouter interface {
	AddWorker(info router.WorkerInfo) error
	RemoveWorker(id uint64) []string
	UpdateWorkerMetrics(w kvevents.Worker, m router.Metrics) error
}

var _ fleetRouter = (*router.Router)(nil)

// init readies a zero pool (New's field) and registers its series and
// its store of learnt adapters on reg.
func (p *pool) init(cfg *Config, client *http.Client, rt fleetRouter, reg prometheus.Registerer) {
	p.cfg, p.log, p.client, p.rt = cfg, cfg.Logger, client, rt
	p.m = newPoolMetrics(reg)
	p.eng = &engineState{w: map[uint64]*workerHealth{}}
	p.adapters = newAdapterSet(cfg.LoRAAdapters)
	reg.MustRegister(p.adapters.learnt)
	p.workers = make(map[uint64]*Worker)
}

// add adds (or updates) a worker. A block size different from the
// router's is refused with an error wrapping router.ErrBlockSize.
func (p *pool) add(w Worker) error {
	if w.URL == "" {
		return fmt.Errorf("frontend: worker %d has no URL", w.ID)
	}
	w.URL = strings.TrimRight(w.URL, "/")
	w.Info.ID = w.ID
	if err := p.rt.AddWorker(w.Info); err != nil {
		if errors.Is(err, router.ErrBlockSize) {
			p.CountRefused("block_size")
		}
		return fmt.Errorf("frontend: add worker %d: %w", w.ID, err)
	}
	p.mu.Lock()
	if _, ok := p.workers[w.ID]; !ok {
		p.ids = append(p.ids, w.ID)
		slices.Sort(p.ids)
	}
	p.workers[w.ID] = &w
	p.mu.Unlock()
	p.log.Info("worker added", "worker", w.ID, "url", w.URL)
	return nil
}

// CountRefused counts a refused worker registration by reason
// (kvrouter_workers_refused_total): the pool's own block-size refusals,
// and the gates' in front of it (discovery.Fleet.OnRefused).
func (p *pool) CountRefused(reason string) {
	p.m.workerRefused.WithLabelValues(reason).Inc()
}

// join adds a discovered worker, with the fleet's defaults for what it
// does not announce.
func (p *pool) join(w discovery.Worker) error {
	role, err := router.ParseRole(w.Role)
	if err != nil {
		return err
	}
	return p.add(Worker{ID: w.ID, URL: w.URL, BootstrapPort: w.BootstrapPort, NoMetrics: w.Metrics == discovery.MetricsOff,
		FleetBudget: w.MaxBatchedTokens == 0, Info: router.WorkerInfo{
			DPSize: w.DPSize, MaxNumBatchedTokens: cmp.Or(w.MaxBatchedTokens, p.cfg.WorkerMaxBatchedTokens), TotalKVBlocks: w.TotalKVBlocks,
			BlockSize: w.BlockSize, Labels: w.Labels, Role: role, MaxNumSeqs: cmp.Or(w.MaxNumSeqs, p.cfg.WorkerMaxNumSeqs),
		}})
}

// remove removes a worker from routing, its index entries and loads.
func (p *pool) remove(id uint64) {
	released := p.rt.RemoveWorker(id)
	p.eng.forget(id)
	p.mu.Lock()
	if _, ok := p.workers[id]; ok {
		delete(p.workers, id)
		p.ids = slices.DeleteFunc(p.ids, func(x uint64) bool { return x == id })
	}
	p.mu.Unlock()
	p.log.Info("worker removed", "worker", id, "released_requests", len(released))
}

// leave removes a worker that went away.
func (p *pool) leave(id uint64) {
	p.remove(id)
	if p.cfg.Events.OnWorkerDown != nil {
		p.cfg.Events.OnWorkerDown(id)
	}
}

// list returns the known workers sorted by id.
func (p *pool) list() []Worker {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]Worker, 0, len(p.ids))
	for _, id := range p.ids {
		out = append(out, *p.workers[id])
	}
	return out
}

func (p *pool) get(id uint64) (*Worker, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	w, ok := p.workers[id]
	return w, ok
}

// dpSize is a registered worker's dp size (ok false: not registered);
// the sink refuses events of ranks beyond it.
func (p *pool) dpSize(id uint64) (int, bool) {
	w, ok := p.get(id)
	if !ok {
		return 0, false
	}
	return w.Info.DPSize, true
}

// markDown takes an unreachable worker out of routing: the router drops its
// index entries and loads. The poller probes it with backoff and brings it back when
// its /health answers (engine.go).
func (p *pool) markDown(id uint64) {
	p.mu.Lock()
	w, ok := p.workers[id]
	if !ok || w.down {
		p.mu.Unlock()
		return
	}
	w.down = true
	p.mu.Unlock()
	p.rt.RemoveWorker(id)
	p.m.workerDown.Inc()
	p.log.Warn("worker down", "worker", id, "url", w.URL)
	if p.cfg.Events.OnWorkerDown != nil {
		p.cfg.Events.OnWorkerDown(id)
	}
}

func (p *pool) markUp(id uint64) {
	p.mu.Lock()
	w, ok := p.workers[id]
	if !ok || !w.down {
		p.mu.Unlock()
		return
	}
	info := w.Info
	p.mu.Unlock()
	if err := p.rt.AddWorker(info); err != nil {
		p.log.Warn("re-add worker", "worker", id, "err", err)
		return
	}
	p.mu.Lock()
	if w, ok := p.workers[id]; ok {
		w.down = false
	}
	p.mu.Unlock()
	p.resetSelfTest(id) // maybe a new engine
	p.log.Info("worker back", "worker", id)
	if p.cfg.Events.OnWorkerUp != nil {
		p.cfg.Events.OnWorkerUp(id)
	}
}

// candidates returns the ids of the workers up, but those in exclude.
func (p *pool) candidates(exclude []uint64) []uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]uint64, 0, len(p.ids))
	for _, id := range p.ids {
		if w := p.workers[id]; w.down || slices.Contains(exclude, id) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// at returns the ids of the workers up whose HostPort is one of
// endpoints, in endpoints' order (unknown endpoints are skipped). Its
// cost is linear in the endpoints plus the workers: the list comes from
// the proxy and may be long.
func (p *pool) at(endpoints []string) []uint64 {
	p.mu.RLock()
	n := len(p.ids)
	at := make(map[string][]uint64, n)
	for _, id := range p.ids {
		if w := p.workers[id]; !w.down {
			hp := HostPort(w.URL)
			at[hp] = append(at[hp], id)
		}
	}
	p.mu.RUnlock()
	out := make([]uint64, 0, min(len(endpoints), n))
	for _, ep := range endpoints {
		out = append(out, at[ep]...)
		delete(at, ep) // each worker once
	}
	return out
}
