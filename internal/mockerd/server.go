package mockerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/prometheus/client_golang/prometheus"
)

// Server is one simulated worker. Create it with New, then Run it (or Serve
// it on a listener).
type Server struct {
	cfg Config
	log *slog.Logger
	eng *mocker.Engine

	ops    chan op
	nextID atomic.Uint64
	stats  atomic.Pointer[mocker.Stats]
	pubs   atomic.Uint64 // events handed to sinks
	pubErr atomic.Uint64
	// releaseErr counts failed releases of pulled blocks (disagg.go).
	releaseErr atomic.Uint64
	// releases tracks the release calls in flight; Run waits for them.
	releases sync.WaitGroup

	reg *prometheus.Registry
	m   metrics

	handler http.Handler
	stopped chan struct{} // closed when Run returns
	loras   *loraSlots    // loaded LoRA adapters (lora.go)
}

// op is a request from a handler to the engine loop.
type op struct {
	add     *stream // enqueue this request
	cancel  uint64  // or cancel this id (add == nil)
	release bool    // or release the blocks held for id cancel (disagg.go)
	reply   chan error
}

// stream carries one request's tokens from the loop to its handler.
type stream struct {
	req mocker.Request
	rb  *reqBlocks // loop-owned; nil without ZMQ
	kv  kvState    // disaggregation (disagg.go)

	mu      sync.Mutex
	pending []mocker.Output
	res     *mocker.Result
	notify  chan struct{} // cap 1: something new under mu
}

func (s *stream) push(outs []mocker.Output, res *mocker.Result) {
	s.mu.Lock()
	s.pending = append(s.pending, outs...)
	if res != nil {
		r := *res
		s.res = &r
	}
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// take returns the tokens produced since the last call and the result once
// the request is over.
func (s *stream) take(buf []mocker.Output) ([]mocker.Output, *mocker.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf = append(buf[:0], s.pending...)
	s.pending = s.pending[:0]
	return buf, s.res
}

// New validates cfg and builds a server. It starts nothing.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger.With("worker", cfg.Engine.Worker.ID),
		eng:     mocker.New(cfg.Engine),
		ops:     make(chan op, 1024),
		reg:     prometheus.NewRegistry(),
		stopped: make(chan struct{}),
	}
	st := s.eng.Stats()
	s.stats.Store(&st)
	s.m = newMetrics(s.reg, s)
	s.loras = newLoRASlots(cfg.MaxLoRAs, s.reg)
	s.handler = s.routes()
	return s, nil
}

// Config returns the effective configuration.
func (s *Server) Config() Config { return s.cfg }

// Handler is the HTTP API (see the package doc).
func (s *Server) Handler() http.Handler { return s.handler }

// Stats returns the engine snapshot taken after the last pass.
func (s *Server) Stats() mocker.Stats { return *s.stats.Load() }

// LoadReport returns the current load report.
func (s *Server) LoadReport() Load {
	st := s.Stats()
	return Load{
		WorkerID:            s.cfg.Engine.Worker.ID,
		DPRank:              s.cfg.Engine.Worker.Rank,
		KVUsage:             st.Usage,
		ActivePrefillTokens: st.ActivePrefillTokens,
		Waiting:             st.Waiting,
		Running:             st.Running,
		TotalBlocks:         st.TotalBlocks,
		ActiveBlocks:        st.ActiveBlocks,
		CachedBlocks:        st.ActiveBlocks + st.InactiveBlocks,
		BlockSize:           s.cfg.Engine.BlockSize,
		MaxNumBatchedTokens: s.cfg.Engine.MaxNumBatchedTokens,
		PromptTokensCached:  st.PromptTokensCached,
		PromptTokensTotal:   st.PromptTokensCached + st.PromptTokensComputed,
		EventsPublished:     s.pubs.Load(),
		HeldRequests:        st.Held,
		KVReleaseErrors:     s.releaseErr.Load(),
	}
}

// Serve runs the engine loop and an HTTP server on ln until ctx is done,
// then stops intake, drains in-flight requests (at most drain; 0 = 10 s)
// and returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	if drain <= 0 {
		drain = 10 * time.Second
	}
	loopCtx, stopLoop := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoop()
	loopDone := make(chan error, 1)
	go func() { loopDone <- s.Run(loopCtx) }()

	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Serve(ln) }()

	var err error
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
		if e := srv.Shutdown(sctx); e != nil {
			_ = srv.Close()
		}
		cancel()
		<-srvDone
	case err = <-srvDone:
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	case err = <-loopDone:
		_ = srv.Close()
		<-srvDone
		return err
	}
	stopLoop()
	if e := <-loopDone; e != nil && err == nil {
		err = e
	}
	return err
}

// Run steps the engine until ctx is done. Requests still in the engine then
// end with their handlers seeing a cancelled result.
func (s *Server) Run(ctx context.Context) error {
	start := time.Now()
	live := make(map[uint64]*stream)
	var bt *blockTokens
	if s.cfg.ZMQ != nil {
		bt = newBlockTokens(s.cfg.Engine.BlockSize, s.cfg.Engine.HashSeed)
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer close(s.stopped)
	// Release calls run on Run's ctx, so on shutdown they end promptly.
	defer s.releases.Wait()
	defer func() {
		for id, st := range live {
			res := s.engCancel(id)
			res.Cancelled = true
			st.push(nil, &res)
		}
	}()
	// A (re)started engine holds nothing: say so first, as vLLM does.
	cleared := s.eng.Cleared()
	s.publish(ctx, &cleared, bt)
	apply := func(o op) {
		if o.release {
			s.releaseOp(o)
			return
		}
		if o.add == nil {
			st, ok := live[o.cancel]
			if !ok {
				return
			}
			delete(live, o.cancel)
			if bt != nil && st.rb != nil {
				bt.drop(st.rb)
			}
			res := s.engCancel(o.cancel)
			res.Cancelled = true
			st.push(nil, &res)
			snap := s.eng.Stats()
			s.stats.Store(&snap)
			return
		}
		o.add.req.Arrival = time.Since(start)
		err := s.engAdd(o.add.req)
		if err == nil {
			live[o.add.req.ID] = o.add
			if bt != nil {
				o.add.rb = bt.add(o.add.req.Tokens, o.add.req.CacheSalt, o.add.req.LoRA)
			}
		}
		o.reply <- err
	}
	for {
		if !s.eng.Busy() {
			due, stop := s.idleWait(start)
			// Idle: also wake for the next hold timeout (disagg.go).
			var expire <-chan time.Time
			if t, ok := s.eng.NextHoldExpiry(); ok {
				expire = time.After(time.Until(start.Add(t)))
			}
			select {
			case <-ctx.Done():
				stop()
				return nil
			case o := <-s.ops:
				apply(o)
			case <-due:
				s.engAdvance(ctx, time.Since(start), bt)
			case <-expire:
				s.expireHolds(time.Since(start))
			}
			stop()
		}
	drain:
		for {
			select {
			case o := <-s.ops:
				apply(o)
			default:
				break drain
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if !s.eng.Busy() {
			continue
		}
		res := s.engStep(ctx, time.Since(start), bt)
		if bt != nil {
			for i := range res.Outputs {
				if st := live[res.Outputs[i].ID]; st != nil && st.rb != nil {
					bt.output(st.rb, &res.Outputs[i])
				}
			}
		}
		for i := range res.Events {
			if !s.storeEvent(&res.Events[i]) {
				s.publish(ctx, &res.Events[i], bt)
			}
		}
		if res.Sleep > 0 {
			if d := time.Until(start.Add(res.End())); d > 0 {
				timer.Reset(d)
				select {
				case <-ctx.Done():
					timer.Stop()
					return nil
				case <-timer.C:
				}
			}
		}
		s.notifyPulled(ctx, res.Pulled, live)
		s.deliver(&res, live, bt)
		st := s.eng.Stats()
		s.stats.Store(&st)
		s.m.observePass(&res)
	}
}

func (s *Server) deliver(res *mocker.StepResult, live map[uint64]*stream, bt *blockTokens) {
	// Outputs of one request are contiguous or interleaved; group per
	// stream with a small scan (a pass holds at most MaxNumSeqs outputs).
	for i := 0; i < len(res.Outputs); {
		j := i + 1
		for j < len(res.Outputs) && res.Outputs[j].ID == res.Outputs[i].ID {
			j++
		}
		if st, ok := live[res.Outputs[i].ID]; ok {
			st.push(res.Outputs[i:j], nil)
		}
		i = j
	}
	for i := range res.Finished {
		r := &res.Finished[i]
		if st, ok := live[r.ID]; ok {
			delete(live, r.ID)
			if bt != nil && st.rb != nil {
				bt.drop(st.rb)
			}
			s.finished(st, r.ID)
			st.push(nil, r)
			s.m.observeResult(r)
		}
	}
}

func (s *Server) publish(ctx context.Context, ev *kvevents.Event, bt *blockTokens) {
	s.publishZMQ(ev, bt)
	for _, sink := range s.cfg.Sinks {
		if err := sink.Publish(ctx, *ev); err != nil {
			s.pubErr.Add(1)
			if ctx.Err() == nil {
				s.log.Warn("publish KV event", "event_id", ev.EventID, "err", err)
			}
		}
	}
	s.pubs.Add(1)
}

func (s *Server) publishZMQ(ev *kvevents.Event, bt *blockTokens) {
	if s.cfg.ZMQ == nil {
		return
	}
	var toks [][]uint32
	var salt, lora string
	if ev.Kind == kvevents.KindStored {
		toks, salt, lora = bt.tokens(ev)
	}
	bt.track(ev)
	if err := s.cfg.ZMQ.PublishSalted(ev, toks, salt, lora); err != nil {
		s.pubErr.Add(1)
		s.log.Warn("publish KV event on ZMQ", "event_id", ev.EventID, "err", err)
	}
}

// submit hands a request to the loop and waits for its admission.
func (s *Server) submit(ctx context.Context, st *stream) error {
	o := op{add: st, reply: make(chan error, 1)}
	select {
	case s.ops <- o:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-o.reply:
		if err != nil {
			return fmt.Errorf("mockerd: add request: %w", err)
		}
		return nil
	case <-ctx.Done():
		// The loop may still add it; cancel to be sure it leaves.
		s.cancel(st.req.ID)
		return ctx.Err()
	}
}

// cancel asks the loop to drop a request; it never blocks for long.
func (s *Server) cancel(id uint64) {
	select {
	case s.ops <- op{cancel: id}:
	default:
		go func() {
			select {
			case s.ops <- op{cancel: id}:
			case <-s.stopped:
			}
		}()
	}
}
