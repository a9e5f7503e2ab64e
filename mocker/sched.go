package mocker

import (
	"fmt"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// Engine is one simulated vLLM engine (one worker+rank). Create it with New.
type Engine struct {
	cfg       Config
	seed      uint64
	watermark int

	pool    pool
	waiting deque
	running []*seq
	byID    map[uint64]*seq

	// The second KV cache group of a hybrid model (hybrid.go): its own
	// pool, and its events of the pass, published after the full
	// attention group's.
	hybrid  HybridConfig
	gpool   pool
	gevents []kvevents.Event

	clock   time.Duration // end of the last pass
	eventID uint64
	pending int // Stats.ActivePrefillTokens
	stats   Stats

	// Lower tiers (DESIGN.md §7): enabled levels in ladder order.
	tiers        TierConfig
	levels       []*level
	blockBytes   int64
	offID        uint64
	pstats       PipelineStats
	traceOffload bool     // record pipeline state changes (tests)
	written      []wtItem // this pass's newly cached blocks (write-through)
	passStart    time.Duration

	// Disaggregation (disagg.go): finished requests holding their blocks
	// for a pull, in finish order; when the KV link is free again.
	held     []held
	pullFree time.Duration
	pulled   []uint64 // pulls landed since the last Step reported them

	// Per-step scratch, reused.
	sched  []item
	hits   []int32
	tok    []uint32
	events []kvevents.Event
	res    StepResult
}

// seq is a request's state.
type seq struct {
	req Request
	// locals and hashes cover every full block of known tokens computed so
	// far (prompt blocks at Add, output blocks as they fill).
	locals, hashes []uint64
	seed           uint64  // local-hash seed: the engine's, or its LoRA's (Request.LoRA)
	blocks         []int32 // physical blocks, in token order
	registered     int     // leading blocks already cached or shared
	numTokens      int     // prompt + generated
	numComputed    int
	outputs        int
	prefillLeft    int // prefill tokens not yet computed (0 when decoding)
	admitted       bool
	running        bool
	done           bool
	hasFirst       bool
	last           time.Duration // time of the last token
	res            Result
	cancelled      bool // Cancel removed it (its offloads die)
	epoch          int  // preemptions so far (a preemption kills offloads)
	// Onboarding: loading until loadEnd, blocks [registered,
	// registered+len(onboard)) staged from lower tiers.
	loading bool
	loadEnd time.Duration
	onboard []onboardBlock
	// Hybrid models (hybrid.go): the sliding group's blocks by position
	// (none where the window left them; positions below gfirst
	// released), or the recurrent group's running state block (none
	// when not admitted).
	gblocks []int32
	gfirst  int
	state   int32
}

// onboardBlock is one block staged up to G1 from level li.
type onboardBlock struct {
	hash uint64
	li   int
}

// wtItem is a block cached in this pass, offered to the pipeline when the
// pass ends (write-through).
type wtItem struct {
	b int32
	s *seq
}

type item struct {
	s      *seq
	numNew int
}

// New returns an engine for cfg. It panics when cfg is invalid (see
// Config.Validate): a config is the programmer's input.
func New(cfg Config) *Engine {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if cfg.KVTransfer.Bandwidth == 0 {
		cfg.KVTransfer = defaultKVTransfer()
	}
	if cfg.HoldTimeout == 0 {
		cfg.HoldTimeout = DefaultHoldTimeout
	}
	seed := cfg.HashSeed
	if seed == 0 {
		seed = kvhash.DefaultSeed
	}
	e := &Engine{
		cfg:       cfg,
		seed:      seed,
		watermark: cfg.watermarkBlocks(),
		pool:      newPool(cfg.NumBlocks),
		byID:      make(map[uint64]*seq),
		tok:       make([]uint32, cfg.BlockSize),
	}
	if cfg.Hybrid.Enabled() {
		e.hybrid = cfg.Hybrid.withDefaults()
		e.gpool = newPool(e.hybrid.groupBlocks(cfg.NumBlocks))
	}
	if cfg.Tiers.enabled() {
		e.tiers = cfg.Tiers
		e.tiers.fillDefaults()
		e.blockBytes = e.tiers.BlockBytes
		if e.blockBytes == 0 {
			e.blockBytes = int64(DefaultBytesPerToken) * int64(cfg.BlockSize)
		}
		if n := e.tiers.HostBlocks; n > 0 {
			e.levels = append(e.levels, &level{st: newStore(kvevents.TierHostPinned, n), down: e.tiers.HostLink, up: e.tiers.HostLink})
		}
		if n := e.tiers.DiskBlocks; n > 0 {
			e.levels = append(e.levels, &level{st: newStore(kvevents.TierDisk, n), down: e.tiers.DiskLink, up: e.tiers.DiskLink})
		}
		if sh := e.tiers.Shared; sh != nil {
			e.levels = append(e.levels, &level{st: sh.st, shared: sh, down: sh.link, up: sh.link})
		}
	}
	return e
}

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Busy reports whether any request is waiting or running.
func (e *Engine) Busy() bool { return e.waiting.len() > 0 || len(e.running) > 0 }

// Now is the end of the last pass (or the start of the last idle Step).
func (e *Engine) Now() time.Duration { return e.clock }

// Add enqueues a request at the back of the waiting queue. It fails with
// ErrBadRequest (empty prompt, MaxOutputTokens < 1), ErrDuplicateID, or
// ErrTooLong when prompt plus output need more blocks than the pool has
// beside the watermark (NumBlocks - Watermark*NumBlocks).
func (e *Engine) Add(req Request) error {
	if len(req.Tokens) == 0 || req.MaxOutputTokens < 1 {
		return fmt.Errorf("%w: request %d has %d prompt tokens and max_output_tokens %d",
			ErrBadRequest, req.ID, len(req.Tokens), req.MaxOutputTokens)
	}
	if _, ok := e.byID[req.ID]; ok {
		return fmt.Errorf("%w: %d", ErrDuplicateID, req.ID)
	}
	if e.hybrid.Enabled() && (req.Hold || req.RemoteBlocks > 0) {
		return fmt.Errorf("%w: request %d: a hybrid model does not model disaggregated hops", ErrBadRequest, req.ID)
	}
	B := e.cfg.BlockSize
	// Invariant: a request that fits beside the watermark can always be
	// admitted into an empty engine, so Step never idles forever.
	// NB: in uint64 (both terms are below 2^63): an output limit near 2^63
	// would wrap an int sum to a small request that then runs forever.
	if need, room := (uint64(len(req.Tokens))+uint64(req.MaxOutputTokens)+uint64(B)-1)/uint64(B), e.cfg.NumBlocks-e.watermark; need > uint64(room) {
		return fmt.Errorf("%w: request %d needs %d blocks, the pool has %d beside the watermark",
			ErrTooLong, req.ID, need, room)
	}
	s := &seq{req: req, numTokens: len(req.Tokens), prefillLeft: len(req.Tokens), seed: e.seed, state: none}
	if req.LoRA != "" {
		s.seed = kvhash.Seed(req.LoRA, "")
	}
	s.res = Result{ID: req.ID, Arrival: req.Arrival, PromptTokens: len(req.Tokens)}
	if e.cfg.EnablePrefixCaching {
		s.locals = kvhash.SaltLocals(kvhash.AppendLocal(make([]uint64, 0, len(req.Tokens)/B+1), req.Tokens, B, s.seed), req.CacheSalt)
		s.hashes = kvhash.AppendSeq(make([]uint64, 0, cap(s.locals)), s.locals)
	}
	e.byID[req.ID] = s
	e.waiting.pushBack(s)
	e.pending += s.prefillLeft
	return nil
}

// Cancel removes a waiting or running request, releasing its blocks, and
// returns its result with Cancelled set; false when the id is unknown.
func (e *Engine) Cancel(id uint64) (Result, bool) {
	s, ok := e.byID[id]
	if !ok {
		return Result{}, false
	}
	if s.running {
		for i, r := range e.running {
			if r == s {
				e.running = append(e.running[:i], e.running[i+1:]...)
				break
			}
		}
		e.freeBlocks(s)
	} else {
		e.waiting.remove(s)
	}
	e.pending -= s.prefillLeft
	delete(e.byID, id)
	s.cancelled = true
	s.res.Cancelled = true
	s.res.Finish = e.clock
	s.res.OutputTokens = s.outputs
	e.maybeCheck()
	return s.res, true
}

// Stats returns a snapshot.
func (e *Engine) Stats() Stats {
	st := e.stats
	st.Now = e.clock
	st.TotalBlocks = e.cfg.NumBlocks
	st.ActiveBlocks = e.pool.active
	st.InactiveBlocks = e.pool.lruLen
	st.FreeBlocks = len(e.pool.free)
	st.Usage = float64(e.pool.active) / float64(e.cfg.NumBlocks)
	st.Waiting = e.waiting.len()
	st.Running = len(e.running)
	st.ActivePrefillTokens = e.pending
	st.Held = len(e.held)
	st.Events = e.eventID
	st.Group = e.groupStats()
	return st
}

// Step runs one forward pass starting at max(now, end of the previous pass):
// it schedules running then waiting requests (see the package doc), emits
// the KV events of the blocks it evicts and caches, advances every scheduled
// request, and finishes those that generated their last token. A pass with
// nothing to run returns Idle. The returned Outputs, Finished and Preempted
// slices are reused by the next Step.
//
// A discrete-event driver adds requests as they arrive and, while Busy,
// calls Step(t) with t the later of the previous pass's End and the next
// arrival. An Idle pass while Busy happens only right after a pass that
// preempted every running request; the next Step admits work again.
func (e *Engine) Step(now time.Duration) StepResult {
	start := max(now, e.clock)
	origin := start
	e.clock = start
	r := &e.res
	*r = StepResult{Outputs: r.Outputs[:0], Finished: r.Finished[:0], Preempted: r.Preempted[:0], Pulled: r.Pulled[:0]}
	e.events = nil
	e.written = e.written[:0]
	e.advance(start)
	e.ExpireHolds(start)
	e.finishLoads(start)
	e.passStart = start
	e.schedule()
	// Nothing runnable but onboardings in flight: the engine waits for
	// the earliest to land (other work would have overlapped it).
	for len(e.sched) == 0 {
		t, ok := e.nextLoad()
		if !ok {
			break
		}
		start = max(start, t)
		e.clock = start
		e.advance(start)
		e.finishLoads(start)
		e.passStart = start
		e.schedule()
	}
	r.Start = start
	if len(e.sched) == 0 {
		r.Idle = true
		e.offerWritten(start)
		r.Pulled, e.pulled = append(r.Pulled, e.pulled...), e.pulled[:0]
		e.flushGroupEvents()
		r.Events = e.events
		e.maybeCheck()
		return *r
	}
	for _, it := range e.sched {
		if it.s.prefillLeft > 0 {
			r.PrefillTokens += it.numNew
		} else {
			r.Decodes++
		}
	}
	r.Usage = float64(e.pool.active) / float64(e.cfg.NumBlocks)
	r.Model = PassTime(r.PrefillTokens, r.Decodes, r.Usage)
	r.Duration = r.Model
	if e.cfg.SpeedupRatio > 0 {
		r.Duration = time.Duration(float64(r.Model) / e.cfg.SpeedupRatio)
		// A shell also waits out an onboarding the pass started after.
		r.Sleep = r.Duration + start - origin
	}
	end := start + r.Duration
	e.clock = end
	e.stats.Passes++
	e.offerWritten(end)

	finished := false
	for _, it := range e.sched {
		s := it.s
		s.numComputed += it.numNew
		if s.prefillLeft > 0 {
			s.prefillLeft -= it.numNew
			e.pending -= it.numNew
		}
		if s.numComputed < s.numTokens {
			continue // mid-prefill chunk
		}
		// The pass computed every known token: sample the next one.
		o := Output{ID: s.req.ID, Token: OutputToken(s.req.ID, s.outputs), Index: s.outputs, Time: end}
		s.outputs++
		s.numTokens++
		if !s.hasFirst {
			s.hasFirst = true
			o.First = true
			s.res.FirstToken = end
			s.res.TTFT = end - s.req.Arrival
		} else {
			o.ITL = end - s.last
			s.res.ITLSum += o.ITL
			s.res.ITLMax = max(s.res.ITLMax, o.ITL)
		}
		s.last = end
		if s.outputs >= s.req.MaxOutputTokens {
			o.Finished = true
			s.done = true
			finished = true
			if s.req.Hold {
				e.hold(s, end)
			} else {
				e.freeBlocks(s)
			}
			delete(e.byID, s.req.ID)
			s.res.Finish = end
			s.res.OutputTokens = s.outputs
			r.Finished = append(r.Finished, s.res)
		}
		r.Outputs = append(r.Outputs, o)
	}
	if finished {
		kept := e.running[:0]
		for _, s := range e.running {
			if !s.done {
				kept = append(kept, s)
			}
		}
		clear(e.running[len(kept):])
		e.running = kept
	}
	r.Pulled, e.pulled = append(r.Pulled, e.pulled...), e.pulled[:0]
	e.flushGroupEvents()
	r.Events = e.events
	e.maybeCheck()
	return *r
}

// schedule fills e.sched with this pass's batch (vLLM v1 order: running
// first, then waiting unless something was preempted).
func (e *Engine) schedule() {
	e.sched = e.sched[:0]
	budget := e.cfg.MaxNumBatchedTokens
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; {
		s := e.running[i]
		if s.loading {
			i++ // onboarding: runs once its blocks landed in G1
			continue
		}
		numNew := min(s.numTokens-s.numComputed, budget)
		for !e.allocate(s, numNew) {
			victim := e.running[len(e.running)-1]
			e.running[len(e.running)-1] = nil
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim)
			preempted = true
			if victim == s {
				numNew = 0
				break
			}
		}
		if numNew == 0 {
			break
		}
		e.register(s, s.numComputed+numNew)
		e.sched = append(e.sched, item{s, numNew})
		budget -= numNew
		i++
	}
	if preempted {
		return
	}
	for e.waiting.len() > 0 && budget > 0 && len(e.running) < e.cfg.MaxNumSeqs {
		s := e.waiting.front()
		used, ok := e.admit(s, budget)
		if !ok {
			break
		}
		e.waiting.popFront()
		e.running = append(e.running, s)
		s.running = true
		budget -= used
	}
}

// admit tries to start waiting request s with at most budget tokens; on
// success it appends s's item to e.sched (unless s first onboards blocks
// from lower tiers) and returns the tokens it scheduled.
func (e *Engine) admit(s *seq, budget int) (int, bool) {
	B := e.cfg.BlockSize
	hits := e.hits[:0]
	inactive := 0
	s.onboard = s.onboard[:0]
	if e.cfg.EnablePrefixCaching {
		// At least one token must be computed, so the last token's block
		// cannot be a hit (vLLM caps the hit at num_tokens-1).
		maxHit := (s.numTokens - 1) / B
		e.ensureHashes(s, maxHit)
		j := 0
		for ; j < maxHit; j++ {
			b, ok := e.pool.byHash[s.hashes[j]]
			if !ok {
				break
			}
			hits = append(hits, b)
			if e.pool.blocks[b].ref == 0 {
				inactive++
			}
		}
		if e.hybrid.Enabled() {
			// A hybrid model reuses only the joint hit (DESIGN.md §13);
			// it has no lower tiers or remote hops to continue from.
			hits = hits[:e.jointHit(s, len(hits))]
			j, inactive = len(hits), 0
			for _, b := range hits {
				if e.pool.blocks[b].ref == 0 {
					inactive++
				}
			}
		}
		// The prefix continues in lower tiers: onboard it (DESIGN.md §7).
		for ; j < maxHit && len(e.levels) > 0; j++ {
			li := e.lowestHolder(s.hashes[j])
			if li < 0 {
				break
			}
			s.onboard = append(s.onboard, onboardBlock{hash: s.hashes[j], li: li})
		}
		// The prefix continues on the remote prefill worker: pull it.
		e.remoteBlocks(s, j, maxHit)
	}
	e.hits = hits
	hitTokens := len(hits) * B
	if n := len(s.onboard); n > 0 {
		// Stage the onboarded blocks into fresh G1 blocks; compute nothing
		// until they land.
		if e.pool.capacity()-n-inactive < e.watermark {
			s.onboard = s.onboard[:0]
			return 0, false
		}
		for _, b := range hits {
			e.pool.acquire(b)
			e.pool.blocks[b].uses++
		}
		s.blocks = append(s.blocks[:0], hits...)
		s.registered = len(hits)
		s.numComputed = hitTokens
		for range n {
			b, ev, evicted := e.pool.take()
			if evicted {
				e.evicted(ev)
			}
			s.blocks = append(s.blocks, b)
		}
		e.startLoad(s)
		e.admitted(s, hitTokens+n*B, hitTokens)
		return 0, true
	}
	numNew := min(s.numTokens-hitTokens, budget)
	need := (hitTokens+numNew+B-1)/B - len(hits)
	if e.pool.capacity()-need-inactive < e.watermark || !e.groupFits(s, len(hits), hitTokens+numNew) {
		return 0, false
	}
	for _, b := range hits {
		e.pool.acquire(b)
		e.pool.blocks[b].uses++
	}
	s.blocks = append(s.blocks[:0], hits...)
	s.registered = len(hits)
	s.numComputed = hitTokens
	if e.hybrid.Enabled() {
		e.groupAdmit(s, len(hits))
	}
	if !e.allocate(s, numNew) {
		panic("mocker: admission allocation failed after the capacity check")
	}
	e.register(s, hitTokens+numNew)
	e.admitted(s, hitTokens, hitTokens)
	e.sched = append(e.sched, item{s, numNew})
	return numNew, true
}

// admitted books an admission whose prompt prefix of hitTokens tokens is
// cached (device the part already in G1).
func (e *Engine) admitted(s *seq, hitTokens, device int) {
	left := s.numTokens - hitTokens
	e.pending += left - s.prefillLeft
	s.prefillLeft = left
	if !s.admitted {
		s.admitted = true
		s.res.CachedTokens = min(hitTokens, len(s.req.Tokens))
		s.res.ComputedTokens = len(s.req.Tokens) - s.res.CachedTokens
		e.stats.PromptTokensCached += uint64(s.res.CachedTokens)
		e.stats.PromptTokensComputed += uint64(s.res.ComputedTokens)
		dev := min(device, s.res.CachedTokens)
		s.res.TierCachedTokens[kvevents.TierDevice] = dev
		e.stats.TierCachedTokens[kvevents.TierDevice] += uint64(dev)
		B := e.cfg.BlockSize
		for k, o := range s.onboard {
			n := min(B, s.res.CachedTokens-dev-k*B)
			if n <= 0 {
				break
			}
			if o.li == remoteLevel {
				s.res.TransferredTokens += n
				continue
			}
			t := e.levels[o.li].st.tier
			s.res.TierCachedTokens[t] += n
			e.stats.TierCachedTokens[t] += uint64(n)
		}
	} else {
		s.res.RecomputedTokens += left
		e.stats.RecomputedTokens += uint64(left)
	}
}

// allocate gives s the blocks to hold numComputed+numNew tokens, evicting
// from the LRU as needed; false (and nothing changed) when the pool cannot.
func (e *Engine) allocate(s *seq, numNew int) bool {
	B := e.cfg.BlockSize
	need := (s.numComputed+numNew+B-1)/B - len(s.blocks)
	if need > e.pool.capacity() {
		return false
	}
	if e.hybrid.Enabled() && !e.groupAllocate(s, s.numComputed+numNew) {
		return false
	}
	for range need {
		b, ev, evicted := e.pool.take()
		if evicted {
			e.evicted(ev)
		}
		s.blocks = append(s.blocks, b)
	}
	return true
}

// register caches s's full blocks up to upto tokens: a block whose hash is
// already cached is swapped for the cached one (its own block goes back to
// the free stack); new ones are cached and announced, each run of
// consecutive new blocks as one Stored event.
func (e *Engine) register(s *seq, upto int) {
	full := upto / e.cfg.BlockSize
	if !e.cfg.EnablePrefixCaching {
		s.registered = max(s.registered, full)
		return
	}
	if full <= s.registered {
		return
	}
	e.ensureHashes(s, full)
	if e.hybrid.Enabled() {
		defer e.groupRegister(s, s.registered, full)
	}
	runStart := -1
	for j := s.registered; j < full; j++ {
		h := s.hashes[j]
		if b, ok := e.pool.byHash[h]; ok {
			// Computed concurrently by another request: share its block.
			if runStart >= 0 {
				e.emitStored(s, runStart, j)
				runStart = -1
			}
			e.pool.acquire(b)
			e.pool.blocks[b].uses++
			e.pool.release(s.blocks[j])
			s.blocks[j] = b
			continue
		}
		var parent uint64
		if j > 0 {
			parent = s.hashes[j-1]
		}
		e.pool.cache(s.blocks[j], h, s.locals[j], parent, uint32(j))
		if e.tiers.WriteThrough && len(e.levels) > 0 {
			e.written = append(e.written, wtItem{s.blocks[j], s})
		}
		if runStart < 0 {
			runStart = j
		}
	}
	if runStart >= 0 {
		e.emitStored(s, runStart, full)
	}
	s.registered = full
}

// ensureHashes extends s's local and sequence hashes to n full blocks,
// hashing generated tokens as they become known.
func (e *Engine) ensureHashes(s *seq, n int) {
	B := e.cfg.BlockSize
	prompt := s.req.Tokens
	for j := len(s.locals); j < n; j++ {
		for k := range B {
			i := j*B + k
			if i < len(prompt) {
				e.tok[k] = prompt[i]
			} else {
				e.tok[k] = OutputToken(s.req.ID, i-len(prompt))
			}
		}
		l := kvhash.Local(e.tok, s.seed)
		if j == 0 {
			l = kvhash.SaltFirst(l, s.req.CacheSalt)
		}
		h := l
		if j > 0 {
			h = kvhash.SeqNext(s.hashes[j-1], l)
		}
		s.locals = append(s.locals, l)
		s.hashes = append(s.hashes, h)
	}
}

// preempt returns running request s to the front of the waiting queue,
// dropping its blocks and computed tokens (recompute later).
func (e *Engine) preempt(s *seq) {
	e.freeBlocks(s)
	s.epoch++
	s.running = false
	s.numComputed = 0
	e.pending += s.numTokens - s.prefillLeft
	s.prefillLeft = s.numTokens
	s.res.Preemptions++
	e.stats.Preemptions++
	e.waiting.pushFront(s)
	e.res.Preempted = append(e.res.Preempted, s.req.ID)
}

// freeBlocks releases s's blocks in reverse order, so that its tail is
// evicted before its prefix (as vLLM does).
func (e *Engine) freeBlocks(s *seq) {
	if s.loading {
		e.unpinLoad(s)
	}
	for j := len(s.blocks) - 1; j >= 0; j-- {
		e.pool.release(s.blocks[j])
	}
	if e.hybrid.Enabled() {
		e.groupFree(s)
	}
	s.blocks = s.blocks[:0]
	s.registered = 0
}

// Cleared returns an AllBlocksCleared event in the engine's event
// sequence. An engine shell publishes it at start, as vLLM does after a
// restart: whatever a router remembers of this worker is gone.
func (e *Engine) Cleared() kvevents.Event { return e.nextEvent(kvevents.KindCleared) }

func (e *Engine) nextEvent(kind kvevents.Kind) kvevents.Event {
	ev := kvevents.Event{WorkerID: e.cfg.Worker.ID, DPRank: e.cfg.Worker.Rank, EventID: e.eventID, Kind: kind}
	e.eventID++
	return ev
}

// emitRemoved announces an eviction, merging it into the pass's previous
// event when that is a Removed too.
func (e *Engine) emitRemoved(h uint64) {
	if n := len(e.events); n > 0 && e.events[n-1].Kind == kvevents.KindRemoved && e.events[n-1].Tier == kvevents.TierDevice {
		e.events[n-1].Hashes = append(e.events[n-1].Hashes, h)
		return
	}
	ev := e.nextEvent(kvevents.KindRemoved)
	ev.Hashes = []uint64{h}
	e.events = append(e.events, ev)
}

// emitStored announces s's newly cached blocks [from, to).
func (e *Engine) emitStored(s *seq, from, to int) {
	ev := e.nextEvent(kvevents.KindStored)
	if from > 0 {
		ev.HasParent, ev.Parent = true, s.hashes[from-1]
	}
	ev.HasStart, ev.StartPosition = true, uint32(from)
	ev.Blocks = make([]kvevents.Block, to-from)
	for j := from; j < to; j++ {
		ev.Blocks[j-from] = kvevents.Block{Hash: s.hashes[j], Local: s.locals[j]}
	}
	e.events = append(e.events, ev)
}
