package eventplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	// Model names the subject token kvrouter.<model>.kv.<worker>; default
	// "kvrouter-mock", the model name of every kvrouter command.
	Model string
	// Format of the payload; default msgpack.
	Format Format
	// MaxBatch is the most events in one stream message; default 64. A
	// worker's batch that reaches it is sent without waiting for Linger.
	MaxBatch int
	// Linger bounds how long an event may wait for more of its worker's
	// events to share a stream message; default DefaultLinger (1ms).
	// Batching is adaptive: an event arriving while no message is awaiting
	// its acknowledgement (an idle pipeline) is sent at once, so Linger
	// only applies under load, where it turns one message per event into
	// one per worker per Linger (per-message cost dominates the event
	// plane: see the package doc). Negative: never wait (send as soon as
	// the intake queue is momentarily empty, the pre-1ms behaviour).
	Linger time.Duration
	// AssignIDs makes the publisher number events per worker+rank (last+1,
	// continuing from the stream after Resume). Default false: the ids the
	// caller set are kept.
	AssignIDs bool
	// Queue is the capacity of the intake queue in events; default 65536.
	// Publish blocks when it is full.
	Queue int
	// MaxInflight is the most unacknowledged messages; default 1024.
	MaxInflight int
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// DefaultLinger is PublisherConfig.Linger's default.
const DefaultLinger = time.Millisecond

func (c *PublisherConfig) setDefaults() {
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.Model == "" {
		c.Model = "kvrouter-mock"
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 64
	}
	if c.Queue <= 0 {
		c.Queue = 65536
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = 1024
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// PublisherStats counts what a Publisher did.
type PublisherStats struct {
	Events   uint64 // events acknowledged by the stream
	Messages uint64 // stream messages acknowledged
	Retries  uint64 // messages re-published after a failed acknowledgement
}

type pubItem struct {
	ev    kvevents.Event
	flush chan error // non-nil: a flush marker
}

type inflight struct {
	msg    *nats.Msg
	fut    jetstream.PubAckFuture
	events int
}

// Publisher batches events per worker and publishes them to the KV events
// stream, keeping per worker+rank order. Publish may be called from many
// goroutines; Run must be running for anything to be sent.
//
// Delivery: every message carries a Nats-Msg-Id derived from its first
// event, so a re-published message is dropped by the server's duplicate
// window; a failed acknowledgement is retried until it succeeds or ctx ends
// (no event is lost while the stream comes back). NB: a retried message can
// land after a later one; subscribers reorder by event_id.
type Publisher struct {
	conn *Conn
	cfg  PublisherConfig
	in   chan pubItem
	// kick wakes a Run that is lingering (not reading in) when the intake
	// holds a batch's worth of events or a Flush marker: Run then sleeps
	// through a linger instead of waking for every event.
	kick   chan struct{}
	kickAt int
	next   map[kvevents.Worker]uint64 // AssignIDs: last id given; owned by Run before start, then Run

	events, messages, retries atomic.Uint64
}

// NewPublisher returns a Publisher on conn. It starts nothing; call Run.
func NewPublisher(conn *Conn, cfg PublisherConfig) *Publisher {
	cfg.setDefaults()
	return &Publisher{conn: conn, cfg: cfg, in: make(chan pubItem, cfg.Queue),
		kick: make(chan struct{}, 1), kickAt: min(cfg.MaxBatch, cfg.Queue/2),
		next: make(map[kvevents.Worker]uint64)}
}

// Publish enqueues one event (copied; the caller may reuse its slices after
// the call returns only if it does not share them: Blocks and Hashes are
// not deep-copied). It blocks while the queue is full.
func (p *Publisher) Publish(ctx context.Context, ev kvevents.Event) error {
	select {
	case p.in <- pubItem{ev: ev}:
		if len(p.in) >= p.kickAt {
			p.wake()
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Publisher) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Flush returns once every event enqueued before the call has been
// acknowledged by the stream.
func (p *Publisher) Flush(ctx context.Context) error {
	done := make(chan error, 1)
	select {
	case p.in <- pubItem{flush: done}:
		p.wake()
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Resume loads, for AssignIDs, the last event id of each rank of the given
// workers from the stream, so a restarted publisher continues numbering
// where it stopped. Call before Run.
func (p *Publisher) Resume(ctx context.Context, workers ...uint64) error {
	for _, w := range workers {
		last, err := LastEventIDs(ctx, p.conn, p.cfg.Model, w)
		if err != nil {
			return err
		}
		for k, id := range last {
			p.next[k] = max(p.next[k], id)
		}
	}
	return nil
}

// LastEventIDs reads the last event id per rank of one worker from the
// newest message on its subject (empty when it has none).
func LastEventIDs(ctx context.Context, conn *Conn, model string, worker uint64) (map[kvevents.Worker]uint64, error) {
	st, err := conn.JS.Stream(ctx, conn.cfg.Stream.Name)
	if err != nil {
		return nil, fmt.Errorf("eventplane: last ids: %w", err)
	}
	out := map[kvevents.Worker]uint64{}
	m, err := st.GetLastMsgForSubject(ctx, conn.Subject(model, worker))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("eventplane: last ids of worker %d: %w", worker, err)
	}
	evs, err := DecodeEnvelope(nil, m.Data)
	if err != nil {
		return nil, fmt.Errorf("eventplane: last ids of worker %d: %w", worker, err)
	}
	for i := range evs {
		k := evs[i].Worker()
		out[k] = max(out[k], evs[i].EventID)
	}
	return out, nil
}

// Stats returns the counters.
func (p *Publisher) Stats() PublisherStats {
	return PublisherStats{Events: p.events.Load(), Messages: p.messages.Load(), Retries: p.retries.Load()}
}

// Run sends until ctx is done. Events still queued when ctx ends are
// dropped; call Flush first for a clean stop.
//
// Batching: Run takes everything queued into per-worker batches (a batch
// reaching MaxBatch is sent at once). Then, when no message awaits its
// acknowledgement (or Linger < 0), it sends every batch; otherwise it
// lingers: it sleeps until Linger has passed, the intake holds MaxBatch
// events, or a Flush arrives, so under load it wakes once per batch rather
// than once per event, and sends one message per worker per Linger.
func (p *Publisher) Run(ctx context.Context) error {
	var (
		batches = make(map[uint64][]kvevents.Event)
		order   []uint64 // workers with a pending batch, first-come order
		queue   []inflight
		timer   = time.NewTimer(time.Hour)
		armed   bool // timer running: lingering
		// subjects caches each worker's subject (built per message otherwise).
		subjects = make(map[uint64]string)
	)
	timer.Stop()
	defer timer.Stop()
	// settleTimer wakes an idle Run while messages await acknowledgement:
	// settle otherwise runs only when new events arrive, so a failed
	// message (its server died, no ack will come) would wait for the next
	// event to be republished, forever if none comes.
	settleTimer := time.NewTimer(time.Hour)
	settleTimer.Stop()
	defer settleTimer.Stop()
	settleArmed := false
	flushBatch := func(w uint64) error {
		evs := batches[w]
		if len(evs) == 0 {
			return nil
		}
		data, err := EncodeEnvelope(make([]byte, 0, envelopeSizeHint(p.cfg.Format, evs)), p.cfg.Format, evs)
		if err != nil {
			return fmt.Errorf("eventplane: publish: %w", err)
		}
		subj, ok := subjects[w]
		if !ok {
			subj = p.conn.Subject(p.cfg.Model, w)
			subjects[w] = subj
		}
		msg := nats.NewMsg(subj)
		msg.Data = data
		e := &evs[0]
		// The id names subject, rank, first event id and count: unique per
		// batch, equal for a retry.
		msg.Header.Set(nats.MsgIdHdr, msg.Subject+"/"+strconv.FormatUint(uint64(e.DPRank), 10)+
			"/"+strconv.FormatUint(e.EventID, 10)+"/"+strconv.Itoa(len(evs)))
		// The encoded payload holds the events now: reuse the batch.
		clear(evs)
		batches[w] = evs[:0]
		for len(queue) >= p.cfg.MaxInflight {
			if queue, err = p.settle(ctx, queue, true); err != nil {
				return err
			}
		}
		fut, err := p.conn.JS.PublishMsgAsync(msg)
		if err != nil {
			// Not sent at all (e.g. too many pending): send it synchronously.
			if err := p.republish(ctx, msg); err != nil {
				return err
			}
			p.events.Add(uint64(len(evs)))
			p.messages.Add(1)
			return nil
		}
		queue = append(queue, inflight{msg: msg, fut: fut, events: len(evs)})
		return nil
	}
	flushAll := func() error {
		for _, w := range order {
			if err := flushBatch(w); err != nil {
				return err
			}
		}
		order = order[:0]
		if len(batches) > 4096 {
			// Many workers came and went: drop the idle ones' buffers.
			clear(batches)
			clear(subjects)
		}
		return nil
	}
	add := func(ev *kvevents.Event) error {
		if p.cfg.AssignIDs {
			k := ev.Worker()
			p.next[k]++
			ev.EventID = p.next[k]
		}
		b, ok := batches[ev.WorkerID]
		if !ok || len(b) == 0 {
			order = append(order, ev.WorkerID)
		}
		if b == nil {
			b = make([]kvevents.Event, 0, p.cfg.MaxBatch)
		}
		b = append(b, *ev)
		batches[ev.WorkerID] = b
		if len(b) >= p.cfg.MaxBatch {
			if err := flushBatch(ev.WorkerID); err != nil {
				return err
			}
			for i, w := range order {
				if w == ev.WorkerID {
					order = append(order[:i], order[i+1:]...)
					break
				}
			}
		}
		return nil
	}
	handle := func(it *pubItem) error {
		if it.flush == nil {
			return add(&it.ev)
		}
		if err := flushAll(); err != nil {
			it.flush <- err
			return err
		}
		var err error
		for len(queue) > 0 && err == nil {
			queue, err = p.settle(ctx, queue, true)
		}
		it.flush <- err
		return err
	}
	// drain handles what is queued now: natural batching under load.
	drain := func() error {
		for {
			select {
			case it := <-p.in:
				if err := handle(&it); err != nil {
					return err
				}
			default:
				return nil
			}
		}
	}
	for {
		var err error
		if armed {
			select {
			case <-ctx.Done():
				return nil
			case <-timer.C:
				armed = false
				if err = drain(); err == nil {
					err = flushAll()
				}
			case <-p.kick:
				err = drain()
			}
		} else {
			var settleC <-chan time.Time
			if len(queue) > 0 {
				if !settleArmed {
					settleTimer.Reset(settleInterval)
					settleArmed = true
				}
				settleC = settleTimer.C
			}
			select {
			case <-ctx.Done():
				return nil
			case it := <-p.in:
				if err = handle(&it); err == nil {
					err = drain()
				}
			case <-p.kick:
				err = drain()
			case <-settleC:
				settleArmed = false
			}
		}
		if err == nil {
			queue, err = p.settle(ctx, queue, false)
		}
		if err == nil {
			switch {
			case len(order) == 0:
				if armed {
					timer.Stop()
					armed = false
				}
			case p.cfg.Linger < 0 || (!armed && len(queue) == 0):
				// Nothing in flight: the pipeline is idle, waiting would
				// only add latency.
				err = flushAll()
			case !armed:
				timer.Reset(p.cfg.Linger)
				armed = true
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// settleInterval is how often an idle Publisher looks at its unacknowledged
// messages (a failed one is republished at the next look).
const settleInterval = 50 * time.Millisecond

// envelopeSizeHint is a generous estimate of the encoded size of evs, so
// a message's payload is allocated once.
func envelopeSizeHint(f Format, evs []kvevents.Event) int {
	perEvent, perBlock := 200, 44
	if f == FormatJSON {
		perEvent, perBlock = 300, 72
	}
	n := 8
	for i := range evs {
		n += perEvent + perBlock*evs[i].NumBlocks()
	}
	return n
}

// settle retires acknowledged messages at the head of queue, re-publishing
// failed ones. With wait it blocks for the head's outcome.
func (p *Publisher) settle(ctx context.Context, queue []inflight, wait bool) ([]inflight, error) {
	n := 0
	for n < len(queue) {
		f := queue[n]
		var err error
		if wait && n == 0 {
			select {
			case <-f.fut.Ok():
			case err = <-f.fut.Err():
			case <-ctx.Done():
				return queue, ctx.Err()
			}
		} else {
			select {
			case <-f.fut.Ok():
			case err = <-f.fut.Err():
			default:
				return queue[n:], nil
			}
		}
		if err != nil {
			if err := p.republish(ctx, f.msg); err != nil {
				return queue[n:], err
			}
		}
		p.events.Add(uint64(f.events))
		p.messages.Add(1)
		n++
	}
	return queue[n:], nil
}

// republish sends msg synchronously until the stream acknowledges it.
func (p *Publisher) republish(ctx context.Context, msg *nats.Msg) error {
	backoff := 10 * time.Millisecond
	for {
		p.retries.Add(1)
		m := nats.NewMsg(msg.Subject)
		m.Data, m.Header = msg.Data, msg.Header
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := p.conn.JS.PublishMsg(cctx, m)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.cfg.Logger.Debug("republish failed; retrying", "subject", msg.Subject, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}
