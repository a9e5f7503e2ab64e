package eventplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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

// outgoing is a sent message awaiting its acknowledgement: its bytes, kept
// for a retry, and the future of its latest send (nil: none pending).
type outgoing struct {
	msg *nats.Msg
	fut jetstream.PubAckFuture
}

// Publisher batches events per worker and publishes them to the KV events
// stream, keeping per worker+rank order. Publish may be called from many
// goroutines; Run must be running for anything to be sent.
//
// Delivery: every message carries a Nats-Msg-Id derived from its first
// event, so a re-published message is dropped by the server's duplicate
// window; a failed acknowledgement is retried (at once, then backing off
// from 10ms to 500ms) until it succeeds or ctx ends (no event is lost while
// the stream comes back). NB: a retried message can land after a later
// one; subscribers reorder by event_id.
//
// The decisions (batching, flushes, numbering, retries, in-order
// retirement) are the batcher's, a pure core tested by the transcripts in
// testdata/batcher; Run owns the channels, the timer and the stream.
type Publisher struct {
	conn *Conn
	cfg  PublisherConfig
	in   chan pubItem
	// kick wakes a Run that is lingering (not reading in) when the intake
	// holds a batch's worth of events or a Flush marker: Run then sleeps
	// through a linger instead of waking for every event.
	kick   chan struct{}
	kickAt int
	b      *batcher // owned by Resume before Run, then by Run

	events, messages, retries atomic.Uint64
}

// NewPublisher returns a Publisher on conn. It starts nothing; call Run.
func NewPublisher(conn *Conn, cfg PublisherConfig) *Publisher {
	cfg.setDefaults()
	return &Publisher{conn: conn, cfg: cfg, in: make(chan pubItem, cfg.Queue),
		kick: make(chan struct{}, 1), kickAt: min(cfg.MaxBatch, cfg.Queue/2),
		b: newBatcher(&cfg)}
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
			p.b.SetLastID(k, id)
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
// Run is the batcher's shell: it feeds it the intake, the stream's
// acknowledgements and the clock, and sends what it returns. Under load
// it reads everything queued, then sleeps while the batches linger, until
// Linger has passed, the intake holds MaxBatch events or a Flush arrives:
// it wakes once per batch rather than once per event.
func (p *Publisher) Run(ctx context.Context) (err error) {
	r := runState{p: p, subjects: make(map[uint64]string)}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var timerAt time.Time
	defer func() {
		for _, w := range r.waiters {
			w.done <- cmp.Or(err, ctx.Err())
		}
		if ctx.Err() != nil {
			err = nil
		}
	}()
	for {
		b := p.b
		var in <-chan pubItem
		if !b.Lingering() && !b.Blocked() {
			in = p.in
		}
		var okC <-chan *jetstream.PubAck
		var errC <-chan error
		w := r.watched()
		if w >= 0 && (!b.Lingering() || len(r.waiters) > 0) {
			okC, errC = r.out[w].fut.Ok(), r.out[w].fut.Err()
		}
		var timerC <-chan time.Time
		if d := b.Deadline(); !d.IsZero() {
			if !d.Equal(timerAt) {
				timer.Reset(time.Until(d))
				timerAt = d
			}
			timerC = timer.C
		}
		drain := true
		select {
		case <-ctx.Done():
			return nil
		case it := <-in:
			r.handle(it)
		case <-p.kick:
		case <-okC:
			r.resolve(w, nil, time.Now())
		case err := <-errC:
			r.resolve(w, err, time.Now())
		case <-timerC:
			timerAt = time.Time{}
			drain = !b.Lingering() || !b.Deadline().After(time.Now())
		}
		if err := r.step(drain); err != nil {
			return err
		}
	}
}

// runState is what Run keeps beside the batcher: the sent messages'
// bytes and futures, the subjects, the Flush callers.
type runState struct {
	p *Publisher
	// out[i] is message first+i of the batcher's inflight range.
	out      []outgoing
	first    uint64
	subjects map[uint64]string // each worker's subject, built once
	waiters  []flushWaiter
}

type flushWaiter struct {
	mark uint64
	done chan error
}

func (r *runState) handle(it pubItem) {
	if it.flush == nil {
		r.p.b.Add(it.ev)
		return
	}
	r.waiters = append(r.waiters, flushWaiter{mark: r.p.b.Flush(), done: it.flush})
}

// step reads what is queued (unless lingering), settles the acknowledged
// messages, sends what the batcher has ready and answers the Flush
// callers whose messages are all acknowledged.
func (r *runState) step(drain bool) error {
	p, b := r.p, r.p.b
	now := time.Now()
	for drain && !b.Blocked() {
		select {
		case it := <-p.in:
			r.handle(it)
			if err := r.send(now); err != nil { // full batches go at once
				return err
			}
			continue
		default:
		}
		break
	}
	r.settle(now)
	if !b.Blocked() {
		b.Drained(now)
	}
	if err := r.send(now); err != nil {
		return err
	}
	// The counters first: a Flush caller answered below reads Stats at once.
	st := b.Stats()
	p.events.Store(st.Events)
	p.messages.Store(st.Messages)
	p.retries.Store(st.Retries)
	r.waiters = slices.DeleteFunc(r.waiters, func(w flushWaiter) bool {
		if b.Flushed(w.mark) {
			w.done <- nil
			return true
		}
		return false
	})
	return nil
}

// send publishes every message the batcher has ready.
func (r *runState) send(now time.Time) error {
	p := r.p
	for {
		m, ok := p.b.Ready(now)
		if !ok {
			return nil
		}
		if m.Events != nil {
			msg, err := r.encode(m)
			if err != nil {
				return err
			}
			r.out = append(r.out, outgoing{msg: msg})
		}
		o := &r.out[m.Seq-r.first]
		// A message is sent afresh each time: the client sets its reply
		// subject.
		msg := nats.NewMsg(o.msg.Subject)
		msg.Data, msg.Header = o.msg.Data, o.msg.Header
		fut, err := p.conn.JS.PublishMsgAsync(msg)
		if err != nil {
			// Not sent at all (e.g. too many pending): retry later.
			p.cfg.Logger.Debug("publish failed; retrying", "subject", msg.Subject, "err", err)
			p.b.Failed(m.Seq, now)
			continue
		}
		o.fut = fut
	}
}

func (r *runState) encode(m message) (*nats.Msg, error) {
	p := r.p
	data, err := EncodeEnvelope(make([]byte, 0, envelopeSizeHint(p.cfg.Format, m.Events)), p.cfg.Format, m.Events)
	if err != nil {
		return nil, fmt.Errorf("eventplane: publish: %w", err)
	}
	subj, ok := r.subjects[m.Worker]
	if !ok {
		if len(r.subjects) > 4096 {
			clear(r.subjects) // many workers came and went
		}
		subj = p.conn.Subject(p.cfg.Model, m.Worker)
		r.subjects[m.Worker] = subj
	}
	msg := nats.NewMsg(subj)
	msg.Data = data
	e := &m.Events[0]
	// The id names subject, rank, first event id and count: unique per
	// batch, equal for a retry.
	msg.Header.Set(nats.MsgIdHdr, subj+"/"+strconv.FormatUint(uint64(e.DPRank), 10)+
		"/"+strconv.FormatUint(e.EventID, 10)+"/"+strconv.Itoa(len(m.Events)))
	return msg, nil
}

// settle hands the batcher the outcomes of the sent messages, head first,
// stopping at the first still pending (the stream acknowledges in order,
// so later ones are rarely done), and drops the retired messages.
func (r *runState) settle(now time.Time) {
scan:
	for i := range r.out {
		f := r.out[i].fut
		if f == nil {
			continue
		}
		select {
		case <-f.Ok():
			r.resolve(i, nil, now)
		case err := <-f.Err():
			r.resolve(i, err, now)
		default:
			break scan
		}
	}
	first, _ := r.p.b.Inflight()
	n := int(first - r.first)
	clear(r.out[:n])
	r.out = r.out[n:]
	r.first = first
}

// resolve records the outcome of out[i]'s pending send (its future's
// value, read once).
func (r *runState) resolve(i int, err error, now time.Time) {
	o := &r.out[i]
	o.fut = nil
	if err == nil {
		r.p.b.Acked(r.first + uint64(i))
		return
	}
	r.p.cfg.Logger.Debug("publish not acknowledged; retrying", "subject", o.msg.Subject, "err", err)
	r.p.b.Failed(r.first+uint64(i), now)
}

// watched is the index in out of the message Run waits on, the oldest
// with a send pending; -1: none.
func (r *runState) watched() int {
	for i := range r.out {
		if r.out[i].fut != nil {
			return i
		}
	}
	return -1
}

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
