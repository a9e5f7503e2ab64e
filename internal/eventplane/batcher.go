package eventplane

import (
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// batcher is the Publisher's core (the etcd raft RawNode split): it
// batches events per worker, decides when a batch becomes a message (full,
// idle pipeline, Linger passed, Flush), numbers the messages, tracks the
// unacknowledged ones in send order and schedules the retries of failed
// ones. It does no I/O, starts no goroutine and reads no clock: time
// enters as now (never the zero time, which means "none" here).
// Publisher.Run owns the intake, the timer and the stream,
// and feeds it. Not safe for concurrent use.
//
// Invariants: a worker+rank's events leave in the order they were added;
// a message carries at most MaxBatch events of one worker; at most
// MaxInflight messages are unacknowledged; messages are retired (counted
// in the stats) in send order, so Flushed(mark) means every earlier
// message is acknowledged.
type batcher struct {
	maxBatch, maxInflight int
	linger                time.Duration
	assignIDs             bool

	next    map[kvevents.Worker]uint64 // assignIDs: last id given
	batches map[uint64][]kvevents.Event
	order   []uint64 // workers with a pending batch, first-come
	due     []message
	free    [][]kvevents.Event // batch buffers to reuse
	lent    []kvevents.Event   // the batch the last Ready returned

	lingering bool
	lingerAt  time.Time

	// inflight are the sent, unretired messages; inflight[i] has sequence
	// number head+i.
	inflight []sentMsg
	head     uint64
	failing  int // inflight messages failed at least once, not yet acknowledged

	stats PublisherStats
}

// message is what Ready returns: a batch to encode and send as message
// Seq, or, with Events nil, a retry: send message Seq again as first
// encoded (same bytes, same Nats-Msg-Id).
type message struct {
	Seq    uint64
	Worker uint64
	Events []kvevents.Event
}

type sentMsg struct {
	events  int
	acked   bool
	failed  int       // failures so far
	retryAt time.Time // non-zero: failed, to be re-sent at retryAt
}

// Retry backoff: the first retry goes at once, the next after 10ms,
// doubling up to 500ms.
const (
	retryFirstBackoff = 10 * time.Millisecond
	retryMaxBackoff   = 500 * time.Millisecond
)

func newBatcher(cfg *PublisherConfig) *batcher {
	return &batcher{maxBatch: cfg.MaxBatch, maxInflight: cfg.MaxInflight, linger: cfg.Linger,
		assignIDs: cfg.AssignIDs, next: make(map[kvevents.Worker]uint64),
		batches: make(map[uint64][]kvevents.Event)}
}

// Add appends ev (copied; with assignIDs numbered last+1 per worker+rank)
// to its worker's batch. A batch reaching MaxBatch is due at once.
func (b *batcher) Add(ev kvevents.Event) {
	b.reclaim()
	if b.assignIDs {
		k := ev.Worker()
		b.next[k]++
		ev.EventID = b.next[k]
	}
	w := ev.WorkerID
	bt := b.batches[w]
	if len(bt) == 0 {
		b.order = append(b.order, w)
		if bt == nil {
			bt = b.alloc()
		}
	}
	bt = append(bt, ev)
	b.batches[w] = bt
	if len(bt) >= b.maxBatch {
		b.makeDue(w)
		for i, o := range b.order {
			if o == w {
				b.order = append(b.order[:i], b.order[i+1:]...)
				break
			}
		}
	}
}

// Drained tells the batcher that the intake is momentarily empty at now.
// With nothing in flight (an idle pipeline) or a negative Linger, every
// pending batch is due: waiting would only add latency. Otherwise the
// pending batches linger until now+Linger (if not lingering already).
func (b *batcher) Drained(now time.Time) {
	switch {
	case len(b.order) == 0:
		b.lingering = false
	case b.linger < 0 || (!b.lingering && len(b.inflight) == 0):
		b.allDue()
	case !b.lingering:
		b.lingering, b.lingerAt = true, now.Add(b.linger)
	}
}

// Flush makes every pending batch due and returns the mark Flushed waits
// for: one past the last message holding an event added so far.
func (b *batcher) Flush() uint64 {
	b.allDue()
	return b.head + uint64(len(b.inflight)) + uint64(len(b.due))
}

// Flushed reports whether every message before mark is acknowledged.
func (b *batcher) Flushed(mark uint64) bool { return b.head >= mark }

// Ready returns the next message to send at now, if any: the oldest
// failed message once its backoff has passed, else a due batch while fewer
// than MaxInflight messages are unacknowledged. It counts the message as
// sent. A batch's Events are valid until the next Add or Ready.
//
// While a failed message is unacknowledged nothing else is sent: a failed
// message is re-sent once every earlier one is acknowledged, one at a
// time, and new batches wait behind it, so messages re-sent after the
// stream came back land in send order (a subscriber on a new stream takes
// a worker's first event id as its baseline). Only messages already in
// flight can overtake a retry.
func (b *batcher) Ready(now time.Time) (message, bool) {
	b.reclaim()
	if b.lingering && !now.Before(b.lingerAt) {
		b.allDue()
	}
	if b.failing > 0 {
		// Acknowledged messages at the head are retired, so inflight[0]
		// is the oldest unacknowledged one: only it may be re-sent.
		if t := b.inflight[0].retryAt; t.IsZero() || now.Before(t) {
			return message{}, false // in flight, or its backoff runs
		}
		b.inflight[0].retryAt = time.Time{}
		b.stats.Retries++
		return message{Seq: b.head}, true
	}
	if len(b.due) == 0 || len(b.inflight) >= b.maxInflight {
		return message{}, false
	}
	m := b.due[0]
	b.due[0] = message{}
	b.due = b.due[1:]
	m.Seq = b.head + uint64(len(b.inflight))
	b.inflight = append(b.inflight, sentMsg{events: len(m.Events)})
	b.lent = m.Events
	return m, true
}

// Blocked reports whether due batches wait for an acknowledgement
// (MaxInflight reached, or a failed message not yet acknowledged): the
// caller should stop adding until one comes.
func (b *batcher) Blocked() bool {
	return len(b.due) > 0 && (len(b.inflight) >= b.maxInflight || b.failing > 0)
}

// Deadline is when Ready next has something to return without new input
// (the linger ends, a retry is due); zero: nothing is scheduled.
func (b *batcher) Deadline() time.Time {
	var d time.Time
	if b.lingering {
		d = b.lingerAt
	}
	if b.failing > 0 {
		if t := b.inflight[0].retryAt; !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	return d
}

// Lingering reports whether pending batches wait for the linger to end.
func (b *batcher) Lingering() bool { return b.lingering }

// Inflight returns the sequence numbers [first, end) of the sent,
// unretired messages.
func (b *batcher) Inflight() (first, end uint64) {
	return b.head, b.head + uint64(len(b.inflight))
}

// Acked records the stream's acknowledgement of message seq and retires
// the acknowledged messages at the head, in send order. Unknown or
// already retired seqs are ignored.
func (b *batcher) Acked(seq uint64) {
	m := b.sent(seq)
	if m == nil || !m.retryAt.IsZero() {
		return
	}
	m.acked = true
	if m.failed > 0 {
		b.failing--
	}
	n := 0
	for n < len(b.inflight) && b.inflight[n].acked {
		b.stats.Events += uint64(b.inflight[n].events)
		b.stats.Messages++
		n++
	}
	clear(b.inflight[:n])
	b.inflight = b.inflight[n:]
	b.head += uint64(n)
}

// Failed records that message seq was not acknowledged at now (an error,
// a timeout, not sent at all): Ready returns it again once its backoff has
// passed and every earlier message is acknowledged. Unknown,
// retired or already failed seqs are ignored.
func (b *batcher) Failed(seq uint64, now time.Time) {
	m := b.sent(seq)
	if m == nil || m.acked || !m.retryAt.IsZero() {
		return
	}
	var wait time.Duration
	if m.failed > 0 {
		wait = min(retryFirstBackoff<<min(m.failed-1, 16), retryMaxBackoff)
	}
	if m.failed == 0 {
		b.failing++
	}
	m.failed++
	m.retryAt = now.Add(wait)
}

// Stats returns the counters: events and messages retired, retries sent.
func (b *batcher) Stats() PublisherStats { return b.stats }

// SetLastID raises worker+rank k's last assigned id to at least id.
func (b *batcher) SetLastID(k kvevents.Worker, id uint64) { b.next[k] = max(b.next[k], id) }

func (b *batcher) sent(seq uint64) *sentMsg {
	if seq < b.head || seq-b.head >= uint64(len(b.inflight)) {
		return nil
	}
	return &b.inflight[seq-b.head]
}

// allDue makes every pending batch due, in first-come order.
func (b *batcher) allDue() {
	for _, w := range b.order {
		b.makeDue(w)
	}
	b.order = b.order[:0]
	b.lingering = false
	if len(b.batches) > 4096 {
		// Many workers came and went: drop the idle ones' buffers.
		clear(b.batches)
	}
}

// makeDue detaches w's batch as a due message; w's next events start a
// new batch behind it.
func (b *batcher) makeDue(w uint64) {
	b.due = append(b.due, message{Worker: w, Events: b.batches[w]})
	b.batches[w] = b.alloc()
}

func (b *batcher) alloc() []kvevents.Event {
	if n := len(b.free); n > 0 {
		bt := b.free[n-1]
		b.free = b.free[:n-1]
		return bt
	}
	return make([]kvevents.Event, 0, b.maxBatch)
}

// reclaim takes back the batch the last Ready lent out: the caller has
// encoded it by now.
func (b *batcher) reclaim() {
	if b.lent == nil {
		return
	}
	clear(b.lent)
	if len(b.free) < 64 {
		b.free = append(b.free, b.lent[:0])
	}
	b.lent = nil
}
