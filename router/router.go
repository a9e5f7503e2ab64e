package router

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/affinity"
	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/loads"
	"github.com/kvrouter/kvrouter/queue"
	"github.com/kvrouter/kvrouter/selector"
)

// Options are the router's collaborators (not configuration).
type Options struct {
	// Rand breaks ties and samples at temperature > 0. Required: seed it
	// differently in every router replica (several routers must not pile
	// onto one worker), and identically in tests and simulations.
	Rand *rand.Rand
	// NewIndex builds the event-fed index of one storage tier (PolicyKV
	// only; called once per tier in New). Default: indexer.NewFlash with
	// Config.Index; with Config.TierChains, indexer.NewRadix for the
	// lower tiers.
	NewIndex func(kvevents.Tier) indexer.Index
	// Approx is the approximate side index (PolicyApprox only). Default:
	// indexer.NewApprox with Config.Index (TTL 120 s).
	Approx Approx
	// Events are optional callbacks.
	Events Events
	// Deferred makes Route return its decision before booking it: the
	// booking waits (settle.go) until Settle or the next call that takes
	// the router's lock, which applies it before reading any state, so
	// decisions are the same as without. A shell sets it and calls Settle
	// off the request path. Default false: Route books before returning.
	Deferred bool
}

var _ Approx = (*indexer.Approx)(nil)

type workerState struct {
	info    WorkerInfo
	metrics []Metrics // per rank
	hasMet  []bool
	timing  *selector.Timing // SetWorkerTiming; nil: Config.Selector.Timing
	links   []linkState      // per rank: booked onboarding loads (onboard.go)
}

// rankRef is one rank with its worker's state and its loads slot: the
// candidates' loop reads the three from one slice (one base, one bounds
// test) rather than three.
type rankRef struct {
	w    kvevents.Worker
	ws   *workerState
	slot int32
}

// pending is one request being decided (and, when queued, waiting). It
// comes from pendingPool with buffers of earlier requests, so steady-state
// routing hashes and looks up without allocating.
type pending struct {
	req    Request
	locals []uint64 // locBuf, or the caller's Request.Locals
	seq    []uint64 // seqBuf: sequence hashes, for PolicyApprox's side index only (else nil)
	isl    int
	ov     [kvevents.NumTiers]indexer.Overlaps // overlaps, reused buffers
	locBuf []uint64
	seqBuf []uint64

	ids   []uint64 // idBuf: the prefix ids of locals, the blocks' names (see prepare)
	idBuf []uint64
}

var pendingPool = sync.Pool{New: func() any { return new(pending) }}

func getPending() *pending { return pendingPool.Get().(*pending) }

// putPending recycles p once nothing refers to it (the decision is taken
// and p is not in the queue).
func putPending(p *pending) {
	p.req = Request{}
	p.locals, p.seq, p.ids = nil, nil, nil
	for t := range p.ov {
		p.ov[t] = p.ov[t][:0]
	}
	pendingPool.Put(p)
}

// approxAppender is the allocation-free lookup of indexer.Approx.
type approxAppender interface {
	AppendMatches(dst indexer.Overlaps, locals []uint64, now time.Time) indexer.Overlaps
}

// approxSeq is indexer.Approx given the sequence hashes the router has
// already computed (no second hash chain per lookup and per insert).
type approxSeq interface {
	AppendMatchesSeq(dst indexer.Overlaps, seqs []uint64, now time.Time) indexer.Overlaps
	InsertSeq(w kvevents.Worker, seqs []uint64, now time.Time)
}

// Router composes index, approximate index, loads, selector, queue and
// affinity. Build with New. Safe for concurrent use (see the package doc).
type Router struct {
	cfg    Config
	sel    *selector.Selector
	idx    [kvevents.NumTiers]indexer.Index         // immutable after New
	app    [kvevents.NumTiers]indexer.MatchAppender // idx[t] if it appends, else nil (FindMatches)
	events Events
	tv     tierView // cross-tier chains (tierview.go)

	idApp [kvevents.NumTiers]indexer.IDMatchAppender // idx[t] if it reads prefix ids, else nil

	mu       sync.Mutex
	rng      *rand.Rand
	rr       [len(hopNames)]rrState // PolicyRoundRobin's position, per hop (each hop its own pool)
	approx   Approx
	predict  *indexer.Approx // predicted side index (Config.Predict), PolicyKV only
	groups   *indexer.Groups // the device index's KV cache group overlay, nil without one
	feat     featureSet      // Config.EnableFeature resolved (features.go)
	loads    *loads.Tracker
	queue    *queue.Fair[*pending]
	aff      *affinity.Table
	workers  map[uint64]*workerState
	ranks    []kvevents.Worker // every rank of every worker, sorted
	rankRefs []rankRef         // rankRefs[i] is ranks[i]'s worker and loads slot
	fin      finishes          // completions per loads slot (finish.go)
	prefills int               // workers of RolePrefill (disagg.go)
	sessions map[string]string // active request id -> session
	stats    Stats

	// Scratch of the decision under mu (Decision.Candidates is the only
	// per-decision allocation).
	sreq      selector.Request
	cands     []selector.Candidate
	newBlocks []int
	reasons   []selector.Reason
	util      float64              // utilization estimate (utilization)
	utilAt    time.Time            // its last update
	utilW     []float64            // per loads slot utilization (rankUtil)
	candBusy  int                  // candidates with a request in prefill (utilization)
	candStep  float64              // rankUtilStep at the candidates' decision (utilization)
	predicted indexer.Overlaps     // predicted overlaps of the decision
	merged    indexer.Overlaps     // mergeMax scratch
	slab      []selector.Breakdown // see breakdowns

	// The fleet's tail of predicted time to first token, per hop
	// (FeatureTailGuard, tail.go).
	tail [len(hopNames)]selector.TailTracker

	// predictAtEnd: a local booking reaches predict when it ends
	// (predictend.go), not when it is routed.
	predictAtEnd bool

	// Deferred bookkeeping (settle.go): Route books later (Options.Deferred).
	deferred     bool
	deferBook    bool    // the decision under way books later (Route only)
	backlog      []later // deferred operations, in order
	routeSettled uint64  // SettleStats.RouteSettled
	outbox       []Booking
}

// New validates cfg and builds a router.
func New(cfg Config, opts Options) (*Router, error) {
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if opts.Rand == nil {
		errs = append(errs, errors.New("router: Options.Rand is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Policy == PolicyKV && opts.NewIndex == nil {
		opts.NewIndex = func(t kvevents.Tier) indexer.Index {
			// Every event-fed index credits hybrid workers their joint
			// match over KV cache groups (DESIGN.md §13); others are
			// untouched.
			if t == kvevents.TierDevice || !cfg.TierChains {
				return indexer.NewGroups(indexer.NewFlash(cfg.Index.Flash), cfg.GroupsConfig())
			}
			// The derived lower-tier indexes (tierview.go) see a removal
			// with live descendants on most evictions: Radix drops a
			// subtree in its size, Flash scans the worker's blocks.
			return indexer.NewGroups(indexer.NewRadix(cfg.Index.Radix), cfg.GroupsConfig())
		}
	}
	if cfg.Policy == PolicyApprox && opts.Approx == nil {
		opts.Approx = indexer.NewApprox(cfg.Index.Approx)
	}
	r := &Router{
		cfg:    cfg,
		sel:    selector.New(cfg.Selector),
		events: opts.Events,
		rng:    opts.Rand,
		approx: opts.Approx,
		loads:  loads.New(cfg.Loads),
		aff: affinity.New(affinity.Config{TTL: cfg.Affinity.TTL, MaxSessions: cfg.Affinity.MaxSessions,
			MaxBytes: cfg.Affinity.MaxBytes}),
		workers:  make(map[uint64]*workerState),
		sessions: make(map[string]string),
		feat:     features(&cfg),
		deferred: opts.Deferred,
	}
	if cfg.Policy == PolicyKV && cfg.Predict.TTL > 0 {
		pc := cfg.Index.Approx
		pc.TTL = cfg.Predict.TTL
		r.predict = indexer.NewApprox(pc)
		r.predictAtEnd = predictAtEnd(cfg)
	}
	if cfg.Queue.Threshold > 0 {
		q, err := queue.NewFair[*pending](cfg.Queue.Policy, cfg.Queue.Capacity, cfg.Queue.MaxTenants, cfg.Queue.TenantWeights)
		if err != nil {
			return nil, fmt.Errorf("router: %w", err)
		}
		r.queue = q
	}
	if cfg.Policy == PolicyKV {
		for t := range kvevents.NumTiers {
			r.idx[t] = opts.NewIndex(kvevents.Tier(t))
			r.app[t], _ = r.idx[t].(indexer.MatchAppender)
			if a, ok := r.idx[t].(indexer.IDMatchAppender); ok && a.WantsIDs() {
				r.idApp[t] = a
			}
		}
		r.groups = groupsOf(r.idx[kvevents.TierDevice])
	}
	return r, nil
}

// Config returns the router's configuration.
func (r *Router) Config() Config { return r.cfg }

// Index returns the event-fed index of tier t (nil outside PolicyKV), for
// shells that apply events through their own wrapper (indexer.Concurrent)
// instead of ApplyEvent.
func (r *Router) Index(t kvevents.Tier) indexer.Index {
	if int(t) >= kvevents.NumTiers {
		return nil
	}
	return r.idx[t]
}

// ApplyEvent applies a KV event to its tier's index. Outside PolicyKV it is
// a no-op. Events of one worker+rank must be applied in order by one
// goroutine at a time (the Index contract); different workers may apply
// concurrently with each other and with Route.
//
// NB: with an asynchronous index (indexer.Concurrent, as serve builds
// through Options.NewIndex) the event is only queued here: the returned
// error, Stats.EventsApplied and Events.OnEvent reflect the hand-off, and
// the index reports each outcome itself (indexer.Events).
//
// NB: events of workers not (yet) added are applied too (a worker may
// publish before it registers); they are never candidates until AddWorker.
func (r *Router) ApplyEvent(ev *kvevents.Event) error {
	if r.cfg.Policy != PolicyKV {
		return nil
	}
	if int(ev.Tier) >= kvevents.NumTiers {
		return fmt.Errorf("router: event of %s: %w", ev.Tier, indexer.ErrBadEvent)
	}
	var err error
	if r.cfg.TierChains {
		err = r.applyTiered(ev)
	} else {
		err = r.idx[ev.Tier].Apply(ev)
	}
	r.mu.Lock()
	if err != nil {
		r.stats.EventsRejected++
	} else {
		r.stats.EventsApplied++
	}
	r.mu.Unlock()
	if r.events.OnEvent != nil {
		r.events.OnEvent(ev, err)
	}
	if err != nil {
		return fmt.Errorf("router: apply %s: %w", ev.Kind, err)
	}
	return nil
}

// AddWorker adds a worker (all ranks 0..DPSize-1) or updates its info. It
// fails with ErrBlockSize when the worker's block size differs from the
// router's.
func (r *Router) AddWorker(info WorkerInfo) error {
	if info.BlockSize != 0 && info.BlockSize != r.cfg.BlockSize {
		return fmt.Errorf("%w: worker %d has block size %d, router %d", ErrBlockSize, info.ID, info.BlockSize, r.cfg.BlockSize)
	}
	if info.DPSize < 0 || info.MaxNumBatchedTokens < 0 || info.MaxNumSeqs < 0 || info.TotalKVBlocks < 0 {
		return fmt.Errorf("%w: worker %d: negative dp size, max batched tokens, max seqs or kv blocks", ErrBadWorker, info.ID)
	}
	if info.DPSize > MaxDPSize {
		// A registration is input: its dp size sizes allocations here.
		return fmt.Errorf("%w: worker %d: dp size %d above %d", ErrBadWorker, info.ID, info.DPSize, MaxDPSize)
	}
	if info.DPSize == 0 {
		info.DPSize = 1
	}
	if err := checkLoRAs(info.ID, info.MaxLoRAs, info.LoRAs); err != nil {
		return err
	}
	info.BlockSize = r.cfg.BlockSize
	info.Labels = cloneLabels(info.Labels)
	info.LoRAs = slices.Clone(info.LoRAs)
	r.lock()
	defer r.mu.Unlock()
	ws := &workerState{info: info, metrics: make([]Metrics, info.DPSize), hasMet: make([]bool, info.DPSize)}
	if old := r.workers[info.ID]; old != nil {
		copy(ws.metrics, old.metrics)
		copy(ws.hasMet, old.hasMet)
		ws.timing = old.timing
		ws.links = old.links
	}
	r.workers[info.ID] = ws
	r.rebuildRanks()
	return nil
}

func cloneLabels(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (r *Router) rebuildRanks() {
	r.ranks = r.ranks[:0]
	for id, ws := range r.workers {
		for rk := range ws.info.DPSize {
			r.ranks = append(r.ranks, kvevents.Worker{ID: id, Rank: uint32(rk)})
		}
	}
	slices.SortFunc(r.ranks, kvevents.Worker.Compare)
	r.rankRefs = r.rankRefs[:0]
	r.prefills = 0
	for _, ws := range r.workers {
		if ws.info.Role == RolePrefill {
			r.prefills++
		}
	}
	for _, w := range r.ranks {
		r.rankRefs = append(r.rankRefs, rankRef{w: w, ws: r.workers[w.ID], slot: int32(r.loads.Slot(w))})
	}
}

// RemoveWorker removes a worker: its ranks leave the candidate set, and its
// index entries (every tier), approximate entries, active loads and session
// bindings are dropped. It returns the ids of the requests it released.
func (r *Router) RemoveWorker(id uint64) []string {
	if r.cfg.Policy == PolicyKV {
		for _, ix := range r.idx {
			ix.RemoveWorker(id)
		}
		r.dropView(id)
	}
	r.lock()
	defer r.mu.Unlock()
	if r.approx != nil {
		r.approx.RemoveWorker(id)
	}
	if r.predict != nil {
		r.predict.RemoveWorker(id)
	}
	delete(r.workers, id)
	for i, w := range r.ranks {
		if s := int(r.rankRefs[i].slot); w.ID == id && s < len(r.utilW) {
			r.utilW[s] = 0 // the slot may go to a new worker
		}
	}
	ids := r.loads.RemoveWorker(id) // frees id's slots before rebuildRanks
	r.rebuildRanks()
	for _, rid := range ids {
		delete(r.sessions, rid)
	}
	r.aff.DropWorker(id)
	return ids
}

// UpdateWorkerMetrics records what a rank reported (for busy thresholds).
func (r *Router) UpdateWorkerMetrics(w kvevents.Worker, m Metrics) error {
	if m.KVUsage < 0 || m.KVUsage > 1 || m.KVUsage != m.KVUsage {
		return fmt.Errorf("%w: kv usage %v of w%s not in [0, 1]", ErrBadWorker, m.KVUsage, w)
	}
	r.mu.Lock() // no load or prediction read: needs no settle
	defer r.mu.Unlock()
	ws := r.workers[w.ID]
	if ws == nil || int(w.Rank) >= ws.info.DPSize {
		return fmt.Errorf("%w: w%s", ErrUnknownWorker, w)
	}
	ws.metrics[w.Rank], ws.hasMet[w.Rank] = m, true
	return nil
}

// Workers returns the workers' infos sorted by id.
func (r *Router) Workers() []WorkerInfo {
	r.mu.Lock() // no load or prediction read: needs no settle
	defer r.mu.Unlock()
	out := make([]WorkerInfo, 0, len(r.workers))
	for _, ws := range r.workers {
		out = append(out, ws.info)
	}
	slices.SortFunc(out, func(a, b WorkerInfo) int { return cmpU64(a.ID, b.ID) })
	return out
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Load returns the tracked load of a worker+rank.
func (r *Router) Load(w kvevents.Worker) loads.Load {
	r.lock()
	defer r.mu.Unlock()
	return r.loads.Load(w)
}

// Pending returns the number of queued requests.
func (r *Router) Pending() int {
	r.lock()
	defer r.mu.Unlock()
	if r.queue == nil {
		return 0
	}
	return r.queue.Len()
}

// Stats returns a snapshot of the counters.
func (r *Router) Stats() Stats {
	r.lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Workers = len(r.workers)
	s.Ranks = len(r.ranks)
	s.Active = r.loads.Stats().Requests
	if r.queue != nil {
		s.Pending = r.queue.Len()
	}
	s.Sessions = r.aff.Len()
	return s
}

// AffinityStats returns the session table's size.
func (r *Router) AffinityStats() AffinityStats {
	r.mu.Lock() // no load or prediction read: needs no settle
	defer r.mu.Unlock()
	return AffinityStats{Sessions: r.aff.Len(), Bytes: r.aff.Bytes(), Evicted: r.aff.Evicted()}
}

// PrefillDone records the first output token of request id at now: its
// prefill tokens leave the prefill load.
func (r *Router) PrefillDone(id string, now time.Time) error {
	r.lock()
	err := r.loads.PrefillDone(id, now)
	w, book := r.localWorker(id)
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnknownRequest, err)
	}
	if book {
		r.events.OnBooking(Booking{Kind: BookPrefillDone, ID: id, Worker: w})
	}
	return nil
}

// Touch records progress of request id at now (keeps Sweep away).
func (r *Router) Touch(id string, now time.Time) error {
	r.lock()
	defer r.mu.Unlock()
	if err := r.loads.Touch(id, now); err != nil {
		return fmt.Errorf("%w: %w", ErrUnknownRequest, err)
	}
	return nil
}

// Sweep releases requests without progress for the stale limit and expired
// session bindings, and returns the released request ids, sorted. Remote
// bookings (ApplyRemote) are swept alike but neither returned nor
// reported: they are not this router's requests.
func (r *Router) Sweep(now time.Time) []string {
	r.lock()
	ids := r.loads.Sweep(now)
	r.stats.Swept += uint64(len(ids))
	ids = localIDs(ids)
	for _, id := range ids {
		delete(r.sessions, id)
	}
	r.aff.Sweep(now)
	r.mu.Unlock()
	if len(ids) > 0 && r.events.OnSweep != nil {
		r.events.OnSweep(ids)
	}
	if r.events.OnBooking != nil {
		for _, id := range ids {
			r.events.OnBooking(Booking{Kind: BookFree, ID: id})
		}
	}
	return ids
}

// String prints the router's whole state: workers with their load, the
// active requests, the queue and the session bindings. For tests.
func (r *Router) String() string {
	r.lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, w := range r.ranks {
		ws := r.workers[w.ID]
		fmt.Fprintf(&b, "w%s: %s", w, r.loads.Load(w))
		if ws.hasMet[w.Rank] {
			fmt.Fprintf(&b, " kv=%.3g", ws.metrics[w.Rank].KVUsage)
		}
		b.WriteByte('\n')
	}
	if s := r.loads.String(); s != "idle\n" {
		for _, line := range strings.SplitAfter(s, "\n") {
			if strings.HasPrefix(line, "  ") {
				b.WriteString(line)
			}
		}
	}
	if r.queue != nil {
		b.WriteString(r.queueString())
	}
	if r.cfg.Affinity.Enabled {
		b.WriteString(r.aff.String())
	}
	return b.String()
}

// ErrSessionID is wrapped by the error of a session id longer than
// AffinityConfig.MaxIDBytes.
var ErrSessionID = errors.New("router: session id too long")

// checkSession refuses a session id beyond AffinityConfig.MaxIDBytes.
func (r *Router) checkSession(s string) error {
	if m := r.cfg.Affinity.MaxIDBytes; m > 0 && len(s) > m {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrSessionID, len(s), m)
	}
	return nil
}

// prepare validates req and computes its hashes.
func (r *Router) prepare(req *Request) (*pending, error) {
	if req.ID == "" {
		return nil, fmt.Errorf("%w: empty request id", ErrBadRequest)
	}
	if req.ISL < 0 || req.OutputTokens < 0 {
		return nil, fmt.Errorf("%w: request %q has negative isl or output tokens", ErrBadRequest, req.ID)
	}
	if err := req.Overrides.Validate(); err != nil {
		return nil, fmt.Errorf("%w: request %q: %w", ErrBadRequest, req.ID, err)
	}
	if err := r.checkSession(req.Session); err != nil {
		return nil, fmt.Errorf("%w: request %q: %w", ErrBadRequest, req.ID, err)
	}
	B := r.cfg.BlockSize
	isl := len(req.Locals) * B
	if req.Tokens != nil {
		isl = len(req.Tokens)
	}
	if req.ISL > 0 {
		isl = req.ISL
	}
	if n := blocksOf(req, B); n*B > isl {
		return nil, fmt.Errorf("%w: request %q: %d blocks of %d tokens exceed isl %d", ErrBadRequest, req.ID, n, B, isl)
	}
	p := getPending()
	p.req, p.isl = *req, isl
	// The router names a prompt's blocks in its own structures (the
	// loads tracker, the predicted side index) by their
	// prefix ids, which Flash reads too; the sequence chain of DESIGN.md
	// §1 (a 13-cycle step per block, the hashing's bound) is computed only
	// for PolicyApprox's side index (Options.Approx is keyed by it).
	seed := kvhash.Seed(req.LoRA, req.Namespace)
	needSeq := r.cfg.Policy == PolicyApprox
	switch {
	case req.Tokens != nil && req.CacheSalt != "":
		// The salt changes block 0, and with it every chained name, so
		// the chains are computed after it (off the fused paths; a prompt
		// without a salt hashes exactly as before).
		p.locBuf = kvhash.SaltLocals(kvhash.AppendLocal(p.locBuf[:0], req.Tokens, B, seed), req.CacheSalt)
		p.locals = p.locBuf
		p.idBuf = kvhash.AppendPrefixIDs(p.idBuf[:0], p.locals)
		if needSeq {
			p.seqBuf = kvhash.AppendSeq(p.seqBuf[:0], p.locals)
			p.seq = p.seqBuf
		}
	case req.Tokens != nil && needSeq:
		p.locBuf, p.seqBuf, p.idBuf = kvhash.AppendLocalSeqID(p.locBuf[:0], p.seqBuf[:0], p.idBuf[:0], req.Tokens, B, seed)
		p.locals, p.seq = p.locBuf, p.seqBuf
	case req.Tokens != nil:
		p.locBuf, p.idBuf = kvhash.AppendLocalID(p.locBuf[:0], p.idBuf[:0], req.Tokens, B, seed)
		p.locals = p.locBuf
	default:
		p.locals = req.Locals
		p.idBuf = kvhash.AppendPrefixIDs(p.idBuf[:0], p.locals)
		if needSeq {
			p.seqBuf = kvhash.AppendSeq(p.seqBuf[:0], p.locals)
			p.seq = p.seqBuf
		}
	}
	p.ids = p.idBuf
	return p, nil
}

// blocksOf is the number of full prompt blocks of req.
func blocksOf(req *Request, B int) int {
	if req.Tokens != nil {
		return len(req.Tokens) / B
	}
	return len(req.Locals)
}

// Route routes req at now. It returns the Decision (Queued when it has to
// wait: it will come back from Release), or an error: ErrBadRequest,
// selector.ErrNoneEligible, selector.ErrAllOverloaded (also a full
// queue, with queue.ErrFull), or ctx's error.
func (r *Router) Route(ctx context.Context, req Request, now time.Time) (Decision, error) {
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	p, err := r.prepare(&req)
	if err != nil {
		rq := req // only the callbacks' copies escape
		r.reject(&rq, err)
		return Decision{}, err
	}
	// Index reads run outside the router lock (indexes are safe for
	// concurrent use), so routing never waits behind event application.
	if r.cfg.Policy == PolicyKV && r.wantsOverlap(&req) {
		r.lookupKV(p)
	}

	r.mu.Lock()
	if len(r.backlog) > 0 {
		r.routeSettled++
		r.settleLocked()
	}
	r.deferBook = r.deferred
	d, queued, err := r.routeLocked(p, now, true)
	r.deferBook = false
	var pendingN int
	if queued {
		pendingN = r.queue.Len()
	}
	r.mu.Unlock()
	if !queued {
		if err == nil && r.events.OnBooking != nil {
			r.bookRoute(p, &d)
		}
		putPending(p)
	}

	switch {
	case err != nil:
		rq := req
		r.reject(&rq, err)
	case queued:
		if r.events.OnQueue != nil {
			rq := req
			r.events.OnQueue(&rq, pendingN)
		}
	case r.events.OnRoute != nil:
		// Pooled copies: &req and &d would move both to the heap on
		// every route (two allocations per decision).
		h := hookArgsPool.Get().(*hookArgs)
		h.req, h.d = req, d
		r.events.OnRoute(&h.req, &h.d)
		d = h.d
		*h = hookArgs{}
		hookArgsPool.Put(h)
	}
	return d, err
}

// hookArgs are Route's arguments to Events.OnRoute, recycled once it
// returns.
type hookArgs struct {
	req Request
	d   Decision
}

var hookArgsPool = sync.Pool{New: func() any { return new(hookArgs) }}

func (r *Router) reject(req *Request, err error) {
	r.mu.Lock()
	r.stats.Rejected++
	r.mu.Unlock()
	if r.events.OnReject != nil {
		r.events.OnReject(req, err)
	}
}

// wantsOverlap reports whether any tier earns credit for req.
func (r *Router) wantsOverlap(req *Request) bool {
	c := r.cfg.Selector
	credit := c.OverlapCredit
	if req.Overrides.OverlapCredit != nil {
		credit = *req.Overrides.OverlapCredit
	}
	return credit > 0 || c.HostWeight > 0 || c.DiskWeight > 0 || c.SharedWeight > 0
}

// lookupKV fills p.ov from the event-fed indexes.
func (r *Router) lookupKV(p *pending) {
	if len(p.locals) == 0 {
		return
	}
	noViews := r.cfg.TierChains && r.tv.n.Load() == 0
	for t := range kvevents.NumTiers {
		if kvevents.Tier(t) == kvevents.TierExternal && r.cfg.Selector.SharedWeight == 0 {
			continue // G4 earns no credit unless weighted (DESIGN.md §7)
		}
		if noViews && kvevents.Tier(t) != kvevents.TierDevice {
			p.ov[t] = p.ov[t][:0] // no worker sent a lower-tier event: nothing derived
			continue
		}
		if a := r.idApp[t]; a != nil {
			p.ov[t] = a.AppendMatchesIDs(p.ov[t][:0], p.locals, p.ids)
		} else if a := r.app[t]; a != nil {
			p.ov[t] = a.AppendMatches(p.ov[t][:0], p.locals)
		} else {
			p.ov[t] = r.idx[t].FindMatches(p.locals)
		}
	}
}
