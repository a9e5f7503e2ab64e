package zmqsub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqguard"
	"github.com/kvrouter/kvrouter/ordering"
	"golang.org/x/sync/semaphore"
)

var (
	// ErrUnknownPod: a bind-mode topic's pod is no worker's (yet).
	ErrUnknownPod = errors.New("zmqsub: unknown pod")
	// ErrModelMismatch: a bind-mode topic's model is not its worker's.
	ErrModelMismatch = errors.New("zmqsub: topic model does not match the worker's")
)

// bindMsg is a message received on bound socket sock.
type bindMsg struct {
	sock int
	msg  zmq4.Msg
	n    int64 // its frames' bytes, counted in flight
}

// held is a message of an unknown pod waiting for its worker.
type held struct {
	sock    int
	topic   string
	seq     int64
	payload []byte
	at      time.Time
}

// Kick asks the bind loop to resolve the held messages again (call it when
// a worker joins: its pod's messages are then applied in order).
func (s *Subscriber) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// listen binds one SUB per Config.Binds entry.
func (s *Subscriber) listen(ctx context.Context) ([]zmq4.Socket, error) {
	var socks []zmq4.Socket
	var addrs []net.Addr
	for _, ep := range s.cfg.Binds {
		// NB: no automatic reconnect on a bound socket: zmq4 (v0.17)
		// would redial the socket's own endpoint when a peer leaves (and
		// races doing it, seen with -race when an engine disconnects).
		sub := zmq4.NewSub(s.guarded(ctx))
		_ = sub.SetOption(zmq4.OptionSubscribe, "")
		if err := sub.Listen(zmqguard.Endpoint(ep)); err != nil {
			for _, o := range socks {
				_ = o.Close()
			}
			_ = sub.Close()
			return nil, fmt.Errorf("zmqsub: bind %s: %w", ep, err)
		}
		socks = append(socks, sub)
		addrs = append(addrs, sub.Addr())
	}
	s.bound.Store(addrs)
	return socks, nil
}

// bindLoop receives on the bound sockets (one reader goroutine each) and
// handles every message on this goroutine, so the messages of one
// publisher keep their order through the hold. Messages received and not
// yet handled are bounded by count (the queue) and bytes (inflightBytes,
// the store "zmq_inflight"): a reader waits for room, and the publishers
// wait in TCP.
func (s *Subscriber) bindLoop(ctx context.Context, socks []zmq4.Socket) {
	in := make(chan bindMsg, bindQueue)
	_, budget := s.inflight.Limits()
	room := semaphore.NewWeighted(budget)
	done := make(chan struct{})
	var readers sync.WaitGroup
	defer readers.Wait()
	for i, sub := range socks {
		readers.Add(1)
		go func() {
			defer readers.Done()
			defer sub.Close()
			for {
				msg, err := sub.Recv()
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					s.log.Debug("zmq recv", "err", err)
					continue
				}
				n := min(msgBytes(msg), budget) // the guard keeps it within MaxMessageBytes
				if room.Acquire(ctx, n) != nil {
					return
				}
				s.inflight.Add(1, n)
				select {
				case in <- bindMsg{sock: i, msg: msg, n: n}:
				case <-done:
					s.inflight.Add(-1, -n)
					room.Release(n)
					return
				}
			}
		}()
	}
	defer close(done)
	defer s.hold.Set(0, 0) // the hold goes with the loop
	tick := time.NewTicker(max(s.cfg.HoldFor/8, 50*time.Millisecond))
	defer tick.Stop()
	var hold []held
	warned := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
			hold = s.retryHeld(ctx, hold, time.Now())
		case now := <-tick.C:
			hold = s.retryHeld(ctx, hold, now)
		case m := <-in:
			hold = s.bindMsg(ctx, m, hold, warned)
			s.inflight.Add(-1, -m.n)
			room.Release(m.n)
		}
	}
}

// bindQueue is how many received messages wait for the bind loop.
const bindQueue = 256

func msgBytes(m zmq4.Msg) int64 {
	var n int64
	for _, f := range m.Frames {
		n += int64(len(f))
	}
	return n
}

// bindMsg handles one message received on a bound socket.
func (s *Subscriber) bindMsg(ctx context.Context, m bindMsg, hold []held, warned map[string]bool) []held {
	topic, seq, payload, ok := s.frames(m.msg, 0)
	if !ok {
		return hold
	}
	// A topic with messages held stays behind them (its pod's
	// registration kicks them, in order); others go straight on.
	if len(hold) > 0 && s.isHeld(hold, topic) {
		s.st.unknownPod.Add(1)
		s.count(0, ordering.RejectUnknownPod, 1)
		return s.holdMsg(hold, held{sock: m.sock, topic: topic, seq: seq, payload: payload, at: time.Now()})
	}
	switch err := s.deliver(ctx, m.sock, topic, seq, payload); {
	case errors.Is(err, ErrUnknownPod):
		s.st.unknownPod.Add(1)
		s.count(0, ordering.RejectUnknownPod, 1)
		if !warned[topic] && len(warned) < 1024 {
			warned[topic] = true
			s.log.Warn("KV events of an unknown pod held until a worker with that pod registers", "topic", topic,
				"hold_for", s.cfg.HoldFor, "err", err)
		}
		hold = s.holdMsg(hold, held{sock: m.sock, topic: topic, seq: seq, payload: payload, at: time.Now()})
	case err != nil:
		if !warned[topic] && len(warned) < 1024 {
			warned[topic] = true
			s.log.Warn("KV events dropped", "topic", topic, "err", err)
		}
	}
	return hold
}

func (s *Subscriber) isHeld(hold []held, topic string) bool {
	for i := range hold {
		if hold[i].topic == topic {
			return true
		}
	}
	return false
}

// heldOverhead is what a held message costs beyond its topic and payload
// (the held struct and slice headers), so empty payloads count too.
const heldOverhead = 96

func heldBytes(h *held) int64 { return int64(len(h.topic)+len(h.payload)) + heldOverhead }

// holdMsg appends h, dropping the oldest past HoldMax or HoldMaxBytes (a
// message larger than HoldMaxBytes alone is dropped, not held).
func (s *Subscriber) holdMsg(hold []held, h held) []held {
	size := heldBytes(&h)
	if _, maxBytes := s.hold.Limits(); size > maxBytes {
		s.st.holdDropped.Add(1)
		s.count(0, ordering.RejectUnknownPodExpired, 1)
		return hold
	}
	over := 0
	for over < len(hold) && !s.hold.Fits(1, size) {
		s.hold.Add(-1, -heldBytes(&hold[over]))
		over++
	}
	if over > 0 {
		s.st.holdDropped.Add(uint64(over))
		s.count(0, ordering.RejectUnknownPodExpired, uint64(over))
		clear(hold[:over])
		hold = append(hold[:0], hold[over:]...)
	}
	h.payload = append([]byte(nil), h.payload...)
	s.hold.Add(1, size)
	return append(hold, h)
}

// retryHeld delivers the held messages whose pod now resolves, in arrival
// order, and drops those older than HoldFor.
func (s *Subscriber) retryHeld(ctx context.Context, hold []held, now time.Time) []held {
	keep := hold[:0]
	stuck := map[string]bool{} // a topic with an older message still held keeps its order
	for _, h := range hold {
		if !stuck[h.topic] {
			err := s.deliver(ctx, h.sock, h.topic, h.seq, h.payload)
			if !errors.Is(err, ErrUnknownPod) {
				s.hold.Add(-1, -heldBytes(&h))
				continue // applied, or dropped for another reason (counted)
			}
		}
		if now.Sub(h.at) >= s.cfg.HoldFor {
			s.st.holdDropped.Add(1)
			s.count(0, ordering.RejectUnknownPodExpired, 1)
			s.hold.Add(-1, -heldBytes(&h))
			continue
		}
		stuck[h.topic] = true
		keep = append(keep, h)
	}
	clear(hold[len(keep):])
	return keep
}

// deliver resolves a bind-mode topic and handles the message; it returns
// the resolution error (ErrUnknownPod: not handled, hold it).
func (s *Subscriber) deliver(ctx context.Context, sock int, topic string, seq int64, payload []byte) error {
	pod, model, ok := ParseTopic(topic)
	if !ok {
		s.st.decErr.Add(1)
		s.count(0, ordering.RejectDecode, 1)
		return fmt.Errorf("zmqsub: topic %q: want kv@<pod>@<model>", topic)
	}
	var id uint64
	var err error
	if s.cfg.Resolve != nil {
		id, err = s.cfg.Resolve(pod, model)
	} else {
		id = TopicHash(pod)
	}
	switch {
	case errors.Is(err, ErrUnknownPod):
		return err
	case errors.Is(err, ErrModelMismatch):
		s.st.mismatch.Add(1)
		s.count(id, ordering.RejectModelMismatch, 1)
		return err
	case err != nil:
		s.st.decErr.Add(1)
		s.count(0, ordering.RejectDecode, 1)
		return err
	}
	key := pubKey{topic: topic, sock: sock}
	key.worker.ID = id
	s.handle(ctx, key, "", seq, payload)
	return nil
}
