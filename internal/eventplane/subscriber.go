package eventplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/ordering"
	"github.com/nats-io/nats.go/jetstream"
)

// Sink receives events in per worker+rank order: the indexer's Concurrent
// wrapper (sticky writers) in kvrouter. Apply may enqueue; an error is
// counted and logged, never fatal (a bad event must not stop ingestion).
type Sink interface {
	Apply(ev *kvevents.Event) error
}

// Flusher is implemented by sinks that apply asynchronously; Flush waits
// until everything given so far is applied. Used before checkpoints.
type Flusher interface {
	Flush(ctx context.Context) error
}

// Position is how far a Subscriber has applied the stream: the last stream
// sequence applied, and the last event id per worker+rank. A snapshot of
// the index taken at a Position resumes exactly there.
type Position struct {
	StreamSeq uint64
	LastIDs   map[kvevents.Worker]uint64
}

// SubscriberConfig configures a Subscriber.
type SubscriberConfig struct {
	// Model filters the subjects consumed; "" (default) consumes every model.
	Model string
	// Start resumes after Start.StreamSeq with Start.LastIDs as the dedup
	// baseline (from a snapshot). Zero: the whole stream.
	Start Position
	// MaxPending, GapTimeout and MaxJump tune the reorder buffer and
	// restart detection (ordering.Config; zero: its defaults).
	MaxPending int
	GapTimeout time.Duration
	MaxJump    uint64
	// AcceptFirst takes the first event id seen of each worker+rank as its
	// baseline whatever its value (ordering.Config.AcceptFirst): for a
	// stream that started over while its publishers kept their ids.
	// Default false.
	AcceptFirst bool
	// Events are optional callbacks.
	Events SubscriberEvents
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// SubscriberEvents are optional callbacks, called from Run's goroutine.
type SubscriberEvents struct {
	// OnApplied is called after each event was handed to the sink.
	OnApplied func(ev *kvevents.Event)
	// OnResync is called when a worker+rank was cleared after a gap the
	// stream could not fill.
	OnResync func(w kvevents.Worker)
	// OnIngest counts n refused events or stream faults of worker (0 when
	// unknown) by reason (ordering.Reject*, ordering.Fault*): decode,
	// worker_mismatch (payload worker not the subject's), gap, resync,
	// restart.
	OnIngest func(worker uint64, reason string, n uint64)
	// OnMessage is called once per stream message, after the events it
	// made ready were handed to the sink (visible in the index when the
	// sink applies synchronously), with the time JetStream stored the
	// message (its metadata timestamp, the server's clock) and the number
	// of events handed over (0 for a duplicate or one held for a gap).
	// now - stored is the event lag: it leaves out the publisher's batch
	// linger (at most PublisherConfig.Linger, 1ms by default) and counts
	// any clock skew between the NATS server and this process.
	OnMessage func(stored time.Time, applied int)
}

// SubscriberStats counts what a Subscriber did.
type SubscriberStats struct {
	Messages   uint64
	Events     uint64 // handed to the sink
	Blocks     uint64 // blocks in those events
	BadPayload uint64 // undecodable messages, skipped
	Mismatch   uint64 // events whose payload worker is not the subject's, dropped
	SinkErrors uint64 // events the sink refused
	StreamSeq  uint64
	Order      ordering.Stats
}

// Subscriber consumes the KV events stream into a Sink: dedups
// redeliveries by (worker, rank, event_id), reorders, detects gaps
// (a gap the stream does not fill within GapTimeout clears that
// worker+rank and counts a resync). Stats and Checkpoint are safe for
// concurrent use with Run.
type Subscriber struct {
	conn *Conn
	sink Sink
	cfg  SubscriberConfig
	log  *slog.Logger

	mu    sync.Mutex // held while a message is applied; Checkpoint takes it
	order *ordering.Order
	pos   uint64

	ready     chan struct{}
	readyOnce sync.Once

	messages, events, blocks, bad, sinkErr, mismatch atomic.Uint64
}

// NewSubscriber returns a Subscriber feeding sink. It starts nothing.
func NewSubscriber(conn *Conn, sink Sink, cfg SubscriberConfig) *Subscriber {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	oc := ordering.Config{MaxPending: cfg.MaxPending, GapTimeout: cfg.GapTimeout, MaxJump: cfg.MaxJump,
		AcceptFirst: cfg.AcceptFirst}
	onResync, onIngest := cfg.Events.OnResync, cfg.Events.OnIngest
	oc.OnClear = func(w kvevents.Worker, r ordering.Reason) {
		if onResync != nil && r == ordering.ReasonGap {
			onResync(w)
		}
		if onIngest != nil {
			reason := ordering.FaultResync
			if r == ordering.ReasonRestart {
				reason = ordering.FaultRestart
			}
			onIngest(w.ID, reason, 1)
		}
	}
	o := ordering.New(oc, cfg.Start.LastIDs)
	return &Subscriber{conn: conn, sink: sink, cfg: cfg, log: cfg.Logger, order: o,
		pos: cfg.Start.StreamSeq, ready: make(chan struct{})}
}

// Ready is closed once the subscriber has applied the stream up to where it
// ended when Run started (caught up; a replica may serve).
func (s *Subscriber) Ready() <-chan struct{} { return s.ready }

func (s *Subscriber) markReady() { s.readyOnce.Do(func() { close(s.ready) }) }

// Stats returns the counters.
func (s *Subscriber) Stats() SubscriberStats {
	s.mu.Lock()
	os, pos := s.order.Stats(), s.pos
	s.mu.Unlock()
	return SubscriberStats{Messages: s.messages.Load(), Events: s.events.Load(), Blocks: s.blocks.Load(),
		BadPayload: s.bad.Load(), Mismatch: s.mismatch.Load(), SinkErrors: s.sinkErr.Load(), StreamSeq: pos, Order: os}
}

// Checkpoint runs fn between two messages, after flushing the sink (when
// it is a Flusher), with the position everything applied so far covers.
// fn should be quick (a Dump); ingestion waits while it runs.
func (s *Subscriber) Checkpoint(ctx context.Context, fn func(Position) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.sink.(Flusher); ok {
		if err := f.Flush(ctx); err != nil {
			return err
		}
	}
	return fn(Position{StreamSeq: s.pos, LastIDs: s.order.Last()})
}

// CheckpointSettled is Checkpoint when no event waits in the reorder
// buffer for a missing one; otherwise it calls nothing and returns false.
// A snapshot needs it: a buffered event was received (its sequence is at
// or below the position) but not applied (not in the dump), so a replica
// restoring that snapshot would never see it.
func (s *Subscriber) CheckpointSettled(ctx context.Context, fn func(Position) error) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.order.Stats().Pending > 0 {
		return false, nil
	}
	if f, ok := s.sink.(Flusher); ok {
		if err := f.Flush(ctx); err != nil {
			return false, err
		}
	}
	return true, fn(Position{StreamSeq: s.pos, LastIDs: s.order.Last()})
}

// Forget drops a worker's dedup state (it left the fleet).
func (s *Subscriber) Forget(id uint64) {
	s.mu.Lock()
	s.order.Forget(id)
	s.mu.Unlock()
}

// Run consumes until ctx is done (then returns nil). Connection or server
// failures are retried from the last applied sequence; duplicates this
// causes are dropped by the dedup.
func (s *Subscriber) Run(ctx context.Context) error {
	// Gap timeouts need a clock even when no message arrives.
	tick := time.NewTicker(max(s.cfg.GapTimeout/4, 50*time.Millisecond))
	defer tick.Stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				s.mu.Lock()
				if s.order.Stats().Pending > 0 {
					s.apply(s.order.Expire(nil, now))
				}
				s.mu.Unlock()
			}
		}
	}()
	backoff := 50 * time.Millisecond
	target := uint64(0)
	for {
		err := s.session(ctx, &target)
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn("KV event stream consumer restarting", "after_seq", s.position(), "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (s *Subscriber) position() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pos
}

// session consumes with one ordered consumer from the current position.
func (s *Subscriber) session(ctx context.Context, target *uint64) error {
	sc := s.conn.cfg.Stream
	filter := s.conn.EventFilter(s.cfg.Model)
	st, err := s.conn.JS.Stream(ctx, sc.Name)
	if err != nil {
		return fmt.Errorf("eventplane: subscribe: %w", err)
	}
	from := s.position()
	if *target == 0 {
		last, err := s.lastSeq(ctx, st, filter)
		if err != nil {
			return fmt.Errorf("eventplane: subscribe: %w", err)
		}
		*target = max(last, 1)
		if last <= from {
			s.markReady()
		}
	}
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 0 {
		occ.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		occ.OptStartSeq = from + 1
	}
	cons, err := st.OrderedConsumer(ctx, occ)
	if err != nil {
		return fmt.Errorf("eventplane: subscribe: %w", err)
	}
	it, err := cons.Messages(jetstream.PullExpiry(5*time.Second), jetstream.PullHeartbeat(time.Second), jetstream.PullMaxMessages(1024))
	if err != nil {
		return fmt.Errorf("eventplane: subscribe: %w", err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	// Watchdog: NB an ordered consumer created while the server was still
	// recovering JetStream was seen to stall silently; when nothing arrives
	// for a second while the stream holds more than was applied, restart
	// the session.
	var stalled atomic.Bool
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := s.messages.Load()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			n := s.messages.Load()
			if n != last {
				last = n
				continue
			}
			ictx, cancel := context.WithTimeout(wctx, time.Second)
			last, err := s.lastSeq(ictx, st, filter)
			cancel()
			if err == nil && last > s.position() {
				stalled.Store(true)
				it.Stop()
				return
			}
		}
	}()

	var evs []kvevents.Event
	var ready []kvevents.Event
	for {
		msg, err := it.Next()
		if err != nil {
			if stalled.Load() {
				return errors.New("eventplane: consumer stalled")
			}
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return err
			}
			return fmt.Errorf("eventplane: consume: %w", err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			s.bad.Add(1)
			s.count(0, ordering.RejectDecode, 1)
			continue
		}
		s.messages.Add(1)
		subjWorker, subjOK := subjectWorker(msg.Subject())
		evs, err = DecodeEnvelope(evs[:0], msg.Data())
		if err != nil {
			s.bad.Add(1)
			s.count(subjWorker, ordering.RejectDecode, 1)
			s.log.Warn("undecodable KV event message skipped", "subject", msg.Subject(), "seq", meta.Sequence.Stream, "err", err)
		}
		now := time.Now()
		s.mu.Lock()
		ready = ready[:0]
		gaps := s.order.Stats().Gaps
		for i := range evs {
			// The subject is the publisher's identity (its NATS
			// permissions can be scoped to it); an event naming another
			// worker would let one publisher poison another's index.
			if !subjOK || evs[i].WorkerID != subjWorker {
				n := s.mismatch.Add(1)
				s.count(subjWorker, ordering.RejectWorkerMismatch, 1)
				if n&(n-1) == 0 { // log on powers of two
					s.log.Warn("KV event of another worker than its subject's dropped", "subject", msg.Subject(),
						"event_worker", evs[i].WorkerID, "dropped", n)
				}
				continue
			}
			ready = s.order.Offer(ready, &evs[i], now)
		}
		if g := s.order.Stats().Gaps - gaps; g > 0 {
			s.count(subjWorker, ordering.FaultGap, g)
		}
		s.apply(ready)
		s.pos = meta.Sequence.Stream
		s.mu.Unlock()
		if s.cfg.Events.OnMessage != nil {
			s.cfg.Events.OnMessage(meta.Timestamp, len(ready))
		}
		if meta.NumPending == 0 || meta.Sequence.Stream >= *target {
			s.markReady()
		}
	}
}

// lastSeq is the stream sequence of the last message the consumer's
// filter matches (0 when none). NB: not the stream's last sequence: other
// models' messages after this model's last one (or a stream holding only
// theirs, as after serve --reset-states) would never arrive, and the
// consumer would neither become ready nor stop looking stalled.
func (s *Subscriber) lastSeq(ctx context.Context, st jetstream.Stream, filter string) (uint64, error) {
	if s.cfg.Model == "" {
		info, err := st.Info(ctx)
		if err != nil {
			return 0, err
		}
		return info.State.LastSeq, nil
	}
	m, err := st.GetLastMsgForSubject(ctx, filter)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

func (s *Subscriber) count(worker uint64, reason string, n uint64) {
	if s.cfg.Events.OnIngest != nil {
		s.cfg.Events.OnIngest(worker, reason, n)
	}
}

// subjectWorker is the worker id of a subject prefix.<model>.kv.<worker>.
func subjectWorker(subject string) (uint64, bool) {
	i := strings.LastIndexByte(subject, '.')
	if i < 0 || !strings.HasSuffix(subject[:i], ".kv") {
		return 0, false
	}
	id, err := strconv.ParseUint(subject[i+1:], 10, 64)
	return id, err == nil
}

// apply hands ready events to the sink; s.mu is held.
func (s *Subscriber) apply(evs []kvevents.Event) {
	for i := range evs {
		ev := &evs[i]
		if err := s.sink.Apply(ev); err != nil {
			s.sinkErr.Add(1)
		}
		s.events.Add(1)
		s.blocks.Add(uint64(ev.NumBlocks()))
		if s.cfg.Events.OnApplied != nil {
			s.cfg.Events.OnApplied(ev)
		}
	}
}
