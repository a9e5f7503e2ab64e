package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sync/errgroup"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/trace"
)

// Progress is told how many requests (over all policies) have completed
// out of total. Run serializes its calls. It may be nil.
type Progress func(done, total int64)

// request is one trace request prepared once and shared (read-only) by
// every policy's simulation.
type request struct {
	rec     *trace.Record
	arrival time.Duration // scaled timestamp
	isl     int           // prompt tokens (synthesized, = InputLength)
	locals  []uint64      // full router blocks' local hashes
	seq     []uint64      // and their sequence hashes
	id      string        // router request id
	lora    int           // adapter (Config.LoRA, lora.go); -1 = base model
}

// prepared is what every policy and the bounds share.
type prepared struct {
	reqs  []request
	span  time.Duration // last arrival - first arrival
	loras []string      // adapter names by index (Config.LoRA)
}

// loraOf is request i's adapter name ("" = base model).
func (p *prepared) loraOf(i int) string {
	if a := p.reqs[i].lora; a >= 0 {
		return p.loras[a]
	}
	return ""
}

// prepare scales the trace and hashes every prompt once.
func prepare(cfg *Config) prepared {
	recs := cfg.Trace
	if cfg.Limit > 0 && cfg.Limit < len(recs) {
		recs = recs[:cfg.Limit]
	}
	p := prepared{reqs: make([]request, len(recs))}
	var tok []uint32
	seed := kvhash.DefaultSeed
	// One backing array for all hashes (fewer, larger allocations).
	total := 0
	for i := range recs {
		total += min(recs[i].InputLength, len(recs[i].HashIDs)*trace.TraceBlockTokens) / cfg.BlockSize
	}
	lbuf := make([]uint64, 0, total)
	sbuf := make([]uint64, 0, total)
	first := recs[0].Timestamp
	var keys []uint64
	if cfg.LoRA.Enabled() {
		keys = sessionKeys(recs, cfg.LoRA.Adapters)
		for a := range cfg.LoRA.Adapters {
			p.loras = append(p.loras, loraName(a))
		}
	}
	for i := range recs {
		r := &recs[i]
		tok = trace.Tokens(tok[:0], r, trace.TraceBlockTokens)
		start := len(lbuf)
		lora, hs := -1, seed
		if cfg.LoRA.Enabled() {
			// An adapter's blocks hash with its name as seed, as the
			// engine hashes them (mocker Request.LoRA).
			lora = adapterOf(keys[i], cfg.LoRA.Adapters)
			hs = kvhash.Seed(p.loras[lora], "")
		}
		lbuf, sbuf = kvhash.AppendLocalSeq(lbuf, sbuf, tok, cfg.BlockSize, hs)
		p.reqs[i] = request{
			rec:     r,
			arrival: time.Duration(math.Round(float64(r.Timestamp-first) / cfg.RateScale)),
			isl:     len(tok),
			locals:  lbuf[start:len(lbuf):len(lbuf)],
			seq:     sbuf[start:len(sbuf):len(sbuf)],
			id:      fmt.Sprint(i),
			lora:    lora,
		}
	}
	p.span = p.reqs[len(p.reqs)-1].arrival
	return p
}

// Run simulates the fleet once per policy on the same trace and returns
// the report. Policies run concurrently (Config.Parallel); each one is a
// deterministic single-threaded discrete-event loop, so the report depends
// only on cfg. Run returns ctx's error when cancelled.
func Run(ctx context.Context, cfg Config, progress Progress) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	cfg.Engine.BlockSize = cfg.BlockSize
	cfg.Router.BlockSize = cfg.BlockSize
	p := prepare(&cfg)
	rep := Report{
		Requests:     len(p.reqs),
		Workers:      cfg.Workers,
		BlockSize:    cfg.BlockSize,
		KVBlocks:     cfg.Engine.NumBlocks,
		RateScale:    cfg.RateScale,
		ArrivalSpanS: p.span.Seconds(),
		EventDelayMS: toMS(cfg.EventDelay),
		Tiers:        cfg.Tiers.String(),
		Model:        string(cfg.Engine.Hybrid.Kind),
		Seed:         cfg.Seed,
		Policies:     nil,
	}
	if p.span > 0 {
		rep.OfferedRate = float64(len(p.reqs)) / p.span.Seconds()
	}
	if cfg.LoRA.Enabled() {
		rep.LoRAAdapters, rep.MaxLoRAs = cfg.LoRA.Adapters, cfg.LoRA.MaxLoRAs
	}

	var mu sync.Mutex
	var done int64
	total := int64(len(p.reqs) * len(cfg.Policies))
	report := func(n int64) {
		if progress == nil || n == 0 {
			return
		}
		mu.Lock()
		done += n
		progress(done, total)
		mu.Unlock()
	}

	par := cfg.Parallel
	if par == 0 {
		par = runtime.GOMAXPROCS(0)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(par + 1)
	g.Go(func() error {
		rep.Bounds = computeBounds(&p, cfg.BlockSize, cfg.Workers*cfg.Engine.NumBlocks)
		return nil
	})
	vs := variants(&cfg)
	rep.Policies = make([]PolicyReport, len(vs))
	total = int64(len(p.reqs) * len(vs))
	for i, v := range vs {
		g.Go(func() error {
			pr, err := runPolicy(gctx, &cfg, &p, v, report)
			if err != nil {
				return fmt.Errorf("sim: policy %s: %w", v.name(), err)
			}
			rep.Policies[i] = pr
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Report{}, err
	}
	for i := range rep.Policies {
		pr := &rep.Policies[i]
		if rep.Bounds.InfiniteHitRate > 0 {
			pr.VsInfinite = pr.HitRate / rep.Bounds.InfiniteHitRate
		}
		if rep.Bounds.PooledHitRate > 0 {
			pr.VsPooled = pr.HitRate / rep.Bounds.PooledHitRate
		}
	}
	return rep, nil
}

// worker is one simulated engine.
type worker struct {
	eng    *mocker.Engine
	inPass bool
	res    mocker.StepResult // the pass in flight (valid while inPass)
	// offloadAt is when an evOffload is scheduled (valid if offloadSet).
	offloadAt  time.Duration
	offloadSet bool
	lora       mocker.LoRASlots // loaded adapters (Config.LoRA, lora.go)
	stats      WorkerReport
}

// fleet is one policy's simulation state.
type fleet struct {
	cfg  *Config
	p    *prepared
	pol  policy
	ws   []worker
	q    eventQueue
	now  time.Duration
	next int // next arrival to schedule

	toks [][]uint32   // per request: its prompt while in an engine
	rows []RequestRow // per request until it completes (Config.KeepRequests)
	pool [][][]uint32 // free token buffers by capacity class

	// Figures.
	ttft, e2e       []float64
	finishes        []time.Duration
	itl             *hdr.Histogram
	completed       int
	rejected        int
	tierHits        [kvevents.NumTiers]int64 // hit blocks by the tier they came from
	transferred     int64                    // prompt blocks pulled from prefill workers
	dis             *disaggSim               // disaggregated variant (disagg.go); nil: aggregated
	rep             PolicyReport
	lastFinish      time.Duration
	pendingProgress int64
}

// progressEvery batches progress reports (requests).
const progressEvery = 256

// ctxCheckEvery is how many loop iterations pass between ctx checks.
const ctxCheckEvery = 1 << 14

func runPolicy(ctx context.Context, cfg *Config, p *prepared, v variant, progress func(int64)) (PolicyReport, error) {
	wall := time.Now()
	f, err := simulate(ctx, cfg, p, v, progress)
	if err != nil {
		return PolicyReport{}, err
	}
	f.finish()
	if rg, ok := f.pol.(regretPolicy); ok && f.dis == nil && rg.tally() != nil {
		rep := rg.tally().rep
		f.rep.Regret = &rep
	}
	f.rep.WallS = time.Since(wall).Seconds()
	return f.rep, nil
}

// simulate runs the discrete-event loop of one policy to the end.
func simulate(ctx context.Context, cfg *Config, p *prepared, v variant, progress func(int64)) (*fleet, error) {
	pol := v.pol
	if v.disagg != nil {
		c := *cfg
		c.Router.Disagg.Policy = *v.disagg
		cfg = &c
	}
	f := &fleet{
		cfg:  cfg,
		p:    p,
		ws:   make([]worker, cfg.Workers),
		toks: make([][]uint32, len(p.reqs)),
		ttft: make([]float64, 0, len(p.reqs)),
		e2e:  make([]float64, 0, len(p.reqs)),
		itl:  hdr.New(1, int64(time.Hour/time.Microsecond), 3),
	}
	f.rep.Policy = v.name()
	if cfg.KeepRequests {
		f.rows = make([]RequestRow, len(p.reqs))
	}
	var err error
	var tiers mocker.TierConfig
	if cfg.Tiers.Enabled() {
		tiers = engineTiers(cfg) // one G4 store per fleet
	}
	for w := range f.ws {
		ec := cfg.Engine
		ec.Worker.ID = uint64(w)
		ec.Tiers = tiers
		f.ws[w].eng = mocker.New(ec)
		f.ws[w].lora.Max = cfg.LoRA.MaxLoRAs
	}
	if f.pol, err = newPolicy(pol, cfg); err != nil {
		return nil, err
	}
	if v.disagg != nil {
		if err := f.startDisagg(); err != nil {
			return nil, err
		}
	}
	f.q.push(event{t: p.reqs[0].arrival, kind: evArrival})
	for n := 0; f.q.len() > 0; n++ {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ev := f.q.pop()
		f.now = ev.t
		switch ev.kind {
		case evArrival:
			f.arrivals()
		case evPassEnd:
			f.passEnd(int(ev.w))
		case evDeliver:
			f.pol.apply(ev.evs)
		case evMetrics:
			f.pol.metrics(int(ev.w), ev.f)
		case evOffload:
			f.offload(int(ev.w))
		case evAdmit:
			f.admit(int(ev.i), int(ev.w))
		}
		if f.pendingProgress >= progressEvery {
			progress(f.pendingProgress)
			f.pendingProgress = 0
		}
	}
	progress(f.pendingProgress)
	if f.completed+f.rejected != len(p.reqs) {
		return nil, fmt.Errorf("%d of %d requests neither completed nor rejected", len(p.reqs)-f.completed-f.rejected, len(p.reqs))
	}
	return f, nil
}

// arrivals routes every request arriving now and schedules the next
// arrival. Requests sharing a timestamp are routed together, so they can
// share the next pass.
func (f *fleet) arrivals() {
	for f.next < len(f.p.reqs) && f.p.reqs[f.next].arrival <= f.now {
		i := f.next
		f.next++
		if f.dis != nil {
			f.arriveDisagg(i)
			continue
		}
		w, queued, err := f.pol.route(f.p, i, f.now)
		switch {
		case err != nil:
			f.reject()
		case queued:
			f.rep.Queued++
		default:
			if f.rows != nil {
				f.noteRoute(i)
			}
			f.dispatch(i, w)
		}
	}
	if f.next < len(f.p.reqs) {
		f.q.push(event{t: f.p.reqs[f.next].arrival, kind: evArrival})
	}
}

func (f *fleet) reject() {
	f.rejected++
	f.rep.Rejected++
	f.pendingProgress++
}

// dispatch hands request i to worker w: to its engine now, or once the
// request's adapter has loaded there (lora.go).
func (f *fleet) dispatch(i, w int) {
	if f.cfg.LoRA.Enabled() {
		if at := f.useLoRA(i, w); at > f.now {
			f.q.push(event{t: at, kind: evAdmit, w: int32(w), i: int32(i)})
			return
		}
	}
	f.admit(i, w)
}

// admit adds request i to worker w's engine and starts a pass if the
// engine is idle.
func (f *fleet) admit(i, w int) {
	r := &f.p.reqs[i]
	tok := f.getTokens(r.isl)
	tok = trace.Tokens(tok, r.rec, trace.TraceBlockTokens)
	if f.rows != nil {
		f.noteDispatch(i, w)
	}
	err := f.ws[w].eng.Add(mocker.Request{
		ID:              uint64(i),
		Tokens:          tok,
		MaxOutputTokens: max(1, r.rec.OutputLength),
		Arrival:         r.arrival,
		RemoteBlocks:    f.peerBlocks(i),
		LoRA:            f.p.loraOf(i),
	})
	if err != nil {
		// ErrTooLong: the prompt cannot fit this engine at all.
		f.putTokens(tok)
		f.pol.free(i, f.now)
		f.reject()
		f.release()
		return
	}
	f.toks[i] = tok
	f.ws[w].stats.Requests++
	if !f.ws[w].inPass {
		f.startPass(w)
	}
}

// startPass runs worker w's next forward pass from now and schedules its
// end.
func (f *fleet) startPass(w int) {
	wk := &f.ws[w]
	for range 4 {
		res := wk.eng.Step(f.now)
		for _, id := range res.Pulled {
			f.pulled(int(id))
		}
		if !res.Idle {
			wk.inPass = true
			wk.res = res
			f.q.push(event{t: res.End(), kind: evPassEnd, w: int32(w)})
			return
		}
		if !wk.eng.Busy() {
			break
		}
		// Idle while busy: the pass preempted everything; step again.
	}
	wk.inPass = false
}

// passEnd delivers worker w's pass results: first tokens and finishes to
// the policy, KV events after the delay, then starts the next pass.
func (f *fleet) passEnd(w int) {
	wk := &f.ws[w]
	res := &wk.res
	wk.stats.Passes++
	wk.stats.BusyS += res.Duration.Seconds()
	if len(res.Events) > 0 && f.pol.wantsEvents() {
		f.q.push(event{t: f.now + f.cfg.EventDelay, kind: evDeliver, w: int32(w), evs: res.Events})
	}
	freed := false
	for k := range res.Outputs {
		o := &res.Outputs[k]
		if f.dis != nil && f.prefillHop(int(o.ID), w) {
			continue // the prefill hop's one token (finished below)
		}
		if o.First {
			if f.rows != nil {
				f.noteFirst(int(o.ID), res)
			}
			f.pol.prefillDone(int(o.ID), f.now)
			f.firstToken(int(o.ID))
			freed = true
		} else {
			_ = f.itl.RecordValue(max(1, int64(o.ITL/time.Microsecond)))
		}
	}
	for k := range res.Finished {
		fr := &res.Finished[k]
		i := int(fr.ID)
		if f.dis != nil && f.prefillHop(i, w) {
			f.prefillFinished(i, w, fr)
			freed = true
			continue
		}
		f.pol.free(i, f.now)
		freed = true
		f.record(w, fr)
		f.putTokens(f.toks[i])
		f.toks[i] = nil
	}
	if f.pol.wantsMetrics() {
		usage := wk.eng.Stats().Usage
		if f.cfg.MetricsDelay > 0 {
			f.q.push(event{t: f.now + f.cfg.MetricsDelay, kind: evMetrics, w: int32(w), f: usage})
		} else {
			f.pol.metrics(w, usage)
		}
	}
	wk.inPass = false
	if wk.eng.Busy() {
		f.startPass(w)
	}
	if !wk.inPass {
		f.scheduleOffload(w)
	}
	if freed {
		f.release()
	}
}

// release dispatches requests the policy had queued, now that capacity
// freed.
func (f *fleet) release() {
	for _, rel := range f.pol.release(f.now) {
		if rel.err != nil {
			f.reject()
			continue
		}
		f.dispatch(rel.i, rel.w)
	}
}

func (f *fleet) record(w int, r *mocker.Result) {
	B := int64(f.cfg.BlockSize)
	f.completed++
	f.pendingProgress++
	f.ttft = append(f.ttft, toMS(r.TTFT))
	f.e2e = append(f.e2e, toMS(r.Finish-r.Arrival))
	f.lastFinish = max(f.lastFinish, r.Finish)
	f.finishes = append(f.finishes, r.Finish)
	rp := &f.rep
	cached, computed := r.CachedTokens, r.ComputedTokens
	if f.dis != nil {
		cached, computed = f.dis.finished(r)
	}
	if f.rows != nil {
		f.noteRecord(int(r.ID), r.TTFT, cached)
	}
	if rg, ok := f.pol.(regretPolicy); ok && f.dis == nil && rg.tally() != nil {
		rg.tally().answered(int(r.ID), w, cached, f.cfg.BlockSize)
	}
	rp.PromptTokens += int64(r.PromptTokens)
	rp.CachedTokens += int64(cached)
	rp.ComputedTokens += int64(computed)
	rp.RecomputedTokens += int64(r.RecomputedTokens)
	rp.OutputTokens += int64(r.OutputTokens)
	rp.Blocks += int64(r.PromptTokens) / B
	rp.HitBlocks += int64(cached) / B
	for t, n := range r.TierCachedTokens {
		f.tierHits[t] += int64(n) / B
	}
	rp.Preemptions += int64(r.Preemptions)
	f.transferred += int64(r.TransferredTokens) / B
	ws := &f.ws[w].stats
	ws.PromptTokens += int64(r.PromptTokens)
	ws.CachedTokens += int64(r.CachedTokens)
	ws.ComputedTokens += int64(r.ComputedTokens)
	ws.Preemptions += int64(r.Preemptions)
}

// finish computes the summary figures.
func (f *fleet) finish() {
	rp := &f.rep
	rp.Completed = f.completed
	if f.cfg.KeepSamples {
		rp.TTFTSamples = append([]float64(nil), f.ttft...)
	}
	rp.TTFT = quantiles(f.ttft)
	if f.dis == nil {
		rp.PeerPulledBlocks = f.transferred
	}
	f.finishDisagg()
	rp.E2E = quantiles(f.e2e)
	if f.itl.TotalCount() > 0 {
		us := func(v int64) float64 { return float64(v) / 1000 }
		rp.ITL = Quantiles{
			Mean: f.itl.Mean() / 1000,
			P50:  us(f.itl.ValueAtQuantile(50)),
			P90:  us(f.itl.ValueAtQuantile(90)),
			P99:  us(f.itl.ValueAtQuantile(99)),
			Max:  us(f.itl.Max()),
		}
	}
	if rp.Blocks > 0 {
		rp.HitRate = float64(rp.HitBlocks) / float64(rp.Blocks)
		if f.cfg.Tiers.Enabled() {
			rp.TierHitRate = map[string]float64{}
			for t, n := range f.tierHits {
				rp.TierHitRate[tierNames[t]] = float64(n) / float64(rp.Blocks)
			}
		}
	}
	makespan := f.lastFinish - f.p.reqs[0].arrival
	rp.MakespanS = makespan.Seconds()
	if makespan > 0 {
		rp.RequestsPerS = float64(f.completed) / rp.MakespanS
		rp.OutputTokPS = float64(rp.OutputTokens) / rp.MakespanS
	}
	rp.Workers = make([]WorkerReport, len(f.ws))
	var maxReq, sumReq, maxPre, sumPre, busy float64
	for w := range f.ws {
		ws := f.ws[w].stats
		rp.Workers[w] = ws
		rp.Passes += ws.Passes
		maxReq, sumReq = max(maxReq, float64(ws.Requests)), sumReq+float64(ws.Requests)
		maxPre, sumPre = max(maxPre, float64(ws.ComputedTokens)), sumPre+float64(ws.ComputedTokens)
		busy += ws.BusyS
	}
	n := float64(len(f.ws))
	if sumReq > 0 {
		rp.ImbalanceRequests = maxReq / (sumReq / n)
	}
	if sumPre > 0 {
		rp.ImbalancePrefill = maxPre / (sumPre / n)
	}
	if makespan > 0 {
		rp.BusyFraction = busy / n / rp.MakespanS
	}
}

// getTokens returns an empty buffer with room for n tokens.
func (f *fleet) getTokens(n int) []uint32 {
	c := bits.Len(uint(n))
	if c < len(f.pool) {
		if s := f.pool[c]; len(s) > 0 {
			b := s[len(s)-1]
			f.pool[c] = s[:len(s)-1]
			return b[:0]
		}
	}
	return make([]uint32, 0, 1<<c)
}

func (f *fleet) putTokens(b []uint32) {
	if b == nil {
		return
	}
	c := bits.Len(uint(cap(b))) - 1 // cap is a power of two: class of n < cap
	if cap(b) != 1<<c {
		return
	}
	for len(f.pool) <= c {
		f.pool = append(f.pool, nil)
	}
	f.pool[c] = append(f.pool[c], b)
}

var errNoPolicy = errors.New("sim: unknown policy")

// scheduleOffload makes an idle engine's offload pipeline run when it has
// work due (a busy engine runs it at each pass's start).
func (f *fleet) scheduleOffload(w int) {
	wk := &f.ws[w]
	t, ok := wk.eng.NextOffload()
	if !ok || (wk.offloadSet && wk.offloadAt <= t) {
		return
	}
	t = max(t, f.now)
	wk.offloadAt, wk.offloadSet = t, true
	f.q.push(event{t: t, kind: evOffload, w: int32(w)})
}

// offload runs idle worker w's pipeline to now and delivers its events.
func (f *fleet) offload(w int) {
	wk := &f.ws[w]
	if !wk.offloadSet || wk.offloadAt != f.now {
		return // superseded by an earlier one
	}
	wk.offloadSet = false
	if wk.inPass {
		return // the next pass runs the pipeline
	}
	evs := wk.eng.Advance(f.now)
	if len(evs) > 0 && f.pol.wantsEvents() {
		f.q.push(event{t: f.now + f.cfg.EventDelay, kind: evDeliver, w: int32(w), evs: evs})
	}
	f.scheduleOffload(w)
}
