package pool

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/tokenizer"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Pool: the frontend's Config fields the pool reads
// (frontend.New builds it).
type Config struct {
	// Logger receives membership, poll and self-test logs (required).
	Logger *slog.Logger
	// Client polls the engines (required).
	Client *http.Client
	// Registry gets the pool's series and the "lora_adapters" store
	// (required).
	Registry prometheus.Registerer
	// BlockSize is the router's block size, compared with the engines'.
	BlockSize int
	// LoadPollInterval is the poll period of Run (0: Run polls nothing).
	LoadPollInterval time.Duration
	// WorkerMaxBatchedTokens and WorkerMaxNumSeqs are the fleet's
	// defaults for what a discovered worker does not announce (Join).
	WorkerMaxBatchedTokens, WorkerMaxNumSeqs int
	// LoRAAdapters are adapter names known before any poll.
	LoRAAdapters []string
	// Model, Tokenizer, OwnTokenizer and ForwardTokens drive the tokenizer
	// self-test (selftest.go): token ids are forwarded to a worker only
	// when ForwardTokens and OwnTokenizer are set and its engine matched.
	Model         string
	Tokenizer     tokenizer.Tokenizer
	OwnTokenizer  bool
	ForwardTokens bool
	// OnWorkerDown and OnWorkerUp, optional, are told when a worker leaves
	// routing (down or removed by Leave) and comes back.
	OnWorkerDown, OnWorkerUp func(id uint64)
}

// Pool is the frontend's engine membership: the workers it knows, which
// of them are up, and what their polls say (engine.go: load, health,
// block size; adapters.go: LoRA adapters; budget.go: SGLang budgets;
// selftest.go: each engine's tokenizer self-test). It keeps the router's
// worker list in step (FleetRouter). The proxy reads it (Get, Candidates,
// ForwardIDs, LoRA) and reports unreachable workers (MarkDown).
//
// A Pool is safe for concurrent use.
type Pool struct {
	cfg      Config // read only
	log      *slog.Logger
	client   *http.Client
	rt       FleetRouter
	m        *poolMetrics
	eng      *engineState // per-worker health (engine.go), shared with the self-test
	adapters *adapterSet  // LoRA adapters, configured and learnt by the polls (adapters.go)

	mu      sync.RWMutex
	workers map[uint64]*Worker
	ids     []uint64 // sorted
}

// Worker is one upstream worker.
type Worker struct {
	// ID is the worker id used in KV events and routing decisions.
	ID uint64
	// URL is the worker's HTTP base URL, e.g. "http://127.0.0.1:8001".
	URL string
	// Info describes the worker to the router (ID is overwritten by ID).
	Info router.WorkerInfo
	// BootstrapPort, on a prefill worker, is its SGLang bootstrap server's
	// port: its disaggregated requests use SGLang's PD protocol
	// (frontend's sglang.go). 0: vLLM's (disagg.go).
	BootstrapPort int
	// NoMetrics: never read the worker's /metrics (a worker option,
	// metrics=off); its health comes from /health, else /v1/models.
	NoMetrics bool
	// FleetBudget: Info.MaxNumBatchedTokens is Config.WorkerMaxBatchedTokens
	// (the registration named none), so the engine's own budget replaces
	// it where the engine says it (budget.go).
	FleetBudget bool
	// AnnouncedLoRAs: Info.LoRAs came with the registration, and the
	// /v1/models poll leaves them alone (adapters.go).
	AnnouncedLoRAs bool

	down bool // unreachable: out of the router until it answers again
}

// Down reports whether the worker was unreachable when listed: out of
// routing until its /health answers again (engine.go).
func (w *Worker) Down() bool { return w.down }

// FleetRouter is the router's worker list as the pool keeps it
// (*router.Router).
type FleetRouter interface {
	AddWorker(info router.WorkerInfo) error
	RemoveWorker(id uint64) []string
	UpdateWorkerMetrics(w kvevents.Worker, m router.Metrics) error
}

var _ FleetRouter = (*router.Router)(nil)

// New builds a pool keeping rt's worker list and registers its series
// and its store of learnt adapters on cfg.Registry. It starts nothing:
// Run polls.
func New(cfg Config, rt FleetRouter) *Pool {
	p := &Pool{cfg: cfg, log: cfg.Logger, client: cfg.Client, rt: rt}
	p.m = newPoolMetrics(cfg.Registry)
	p.eng = &engineState{w: map[uint64]*workerHealth{}}
	p.adapters = newAdapterSet(cfg.LoRAAdapters)
	cfg.Registry.MustRegister(p.adapters.learnt)
	p.workers = make(map[uint64]*Worker)
	return p
}

// Add adds (or updates) a worker. A block size different from the
// router's is refused with an error wrapping router.ErrBlockSize.
func (p *Pool) Add(w Worker) error {
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
func (p *Pool) CountRefused(reason string) {
	p.m.workerRefused.WithLabelValues(reason).Inc()
}

// Join adds a discovered worker, with the fleet's defaults for what it
// does not announce.
func (p *Pool) Join(w discovery.Worker) error {
	role, err := router.ParseRole(w.Role)
	if err != nil {
		return err
	}
	return p.Add(Worker{ID: w.ID, URL: w.URL, BootstrapPort: w.BootstrapPort, NoMetrics: w.Metrics == discovery.MetricsOff,
		FleetBudget: w.MaxBatchedTokens == 0, Info: router.WorkerInfo{
			DPSize: w.DPSize, MaxNumBatchedTokens: cmp.Or(w.MaxBatchedTokens, p.cfg.WorkerMaxBatchedTokens), TotalKVBlocks: w.TotalKVBlocks,
			BlockSize: w.BlockSize, Labels: w.Labels, Role: role, MaxNumSeqs: cmp.Or(w.MaxNumSeqs, p.cfg.WorkerMaxNumSeqs),
			LoRAKnown: w.MaxLoRAs > 0 || w.LoRAs != nil, LoRAs: w.LoRAs, MaxLoRAs: w.MaxLoRAs,
		}, AnnouncedLoRAs: w.LoRAs != nil})
}

// Remove removes a worker from routing, its index entries and loads.
func (p *Pool) Remove(id uint64) {
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

// Leave removes a worker that went away.
func (p *Pool) Leave(id uint64) {
	p.Remove(id)
	if p.cfg.OnWorkerDown != nil {
		p.cfg.OnWorkerDown(id)
	}
}

// List returns the known workers sorted by id.
func (p *Pool) List() []Worker {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]Worker, 0, len(p.ids))
	for _, id := range p.ids {
		out = append(out, *p.workers[id])
	}
	return out
}

// Get returns worker id (ok false: not registered). The Worker is the
// pool's own: read it, never write it.
func (p *Pool) Get(id uint64) (*Worker, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	w, ok := p.workers[id]
	return w, ok
}

// DPSize is a registered worker's dp size (ok false: not registered);
// the sink refuses events of ranks beyond it.
func (p *Pool) DPSize(id uint64) (int, bool) {
	w, ok := p.Get(id)
	if !ok {
		return 0, false
	}
	return w.Info.DPSize, true
}

// MarkDown takes an unreachable worker out of routing: the router drops its
// index entries and loads. The poller probes it with backoff and brings it back when
// its /health answers (engine.go).
func (p *Pool) MarkDown(id uint64) {
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
	if p.cfg.OnWorkerDown != nil {
		p.cfg.OnWorkerDown(id)
	}
}

func (p *Pool) markUp(id uint64) {
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
	if p.cfg.OnWorkerUp != nil {
		p.cfg.OnWorkerUp(id)
	}
}

// Candidates returns the ids of the workers up, but those in exclude.
func (p *Pool) Candidates(exclude []uint64) []uint64 {
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

// At returns the ids of the workers up whose HostPort is one of
// endpoints, in endpoints' order (unknown endpoints are skipped). Its
// cost is linear in the endpoints plus the workers: the list comes from
// the proxy and may be long.
func (p *Pool) At(endpoints []string) []uint64 {
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

// HostPort is a worker URL's network endpoint, "ip:port" (the form the
// Gateway API endpoint picker protocol names endpoints in); "" when the
// URL has no host.
func HostPort(workerURL string) string {
	u, err := url.Parse(workerURL)
	if err != nil {
		return ""
	}
	if u.Port() == "" && u.Host != "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		return u.Host + ":" + port
	}
	return u.Host
}
