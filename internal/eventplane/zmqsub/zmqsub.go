package zmqsub

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/internal/bounds"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqguard"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/ordering"
	"github.com/zeebo/xxh3"
)

// Sink receives events in per worker+rank order (an index, or a
// Publisher adapter in the bridge). Apply is called from one goroutine per
// publisher; it must be safe for concurrent use across workers.
type Sink interface {
	Apply(ev *kvevents.Event) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ev *kvevents.Event) error

// Apply calls f.
func (f SinkFunc) Apply(ev *kvevents.Event) error { return f(ev) }

// DecodeFunc decodes one vLLM/SGLang payload ([ts, events, dp_rank?]) of
// worker w (rank = the socket's rank; a payload dp_rank overrides it) into
// events appended to dst, event ids unset.
type DecodeFunc func(dst []kvevents.Event, payload []byte, w kvevents.Worker, blockSize int) ([]kvevents.Event, error)

// Source is one engine in the connect topology.
type Source struct {
	// WorkerID is the router's id of the engine.
	WorkerID uint64
	// Endpoint is the engine's PUB endpoint, e.g. "tcp://10.0.0.5:5557".
	Endpoint string
	// Replay is the engine's replay ROUTER endpoint; "" = no replay.
	Replay string
	// DPSize is the number of data-parallel ranks; rank r publishes on the
	// endpoint's port + r (and replays on the replay port + r). Default 1.
	DPSize int
	// Topic is the subscription prefix; "" (default) takes every topic.
	Topic string
}

// Config configures a Subscriber.
type Config struct {
	// BlockSize is the router's block size; a payload whose block_size
	// differs is rejected (counted, logged). Required.
	BlockSize int
	// Sources to dial (connect topology).
	Sources []Source
	// Dynamic: sources come and go at run time (Subscriber.Add, Remove),
	// so Run needs no static source or bind. Default false.
	Dynamic bool
	// Binds are endpoints (tcp://host:port) where one SUB each is bound
	// for engines that connect their PUB to the router (bind topology).
	// Default none.
	Binds []string
	// Resolve maps a bind-mode topic "kv@<pod>@<model>" to its worker id;
	// its error wraps ErrUnknownPod (the message is held, see HoldFor) or
	// ErrModelMismatch (dropped). Default: TopicHash(pod), any model.
	Resolve func(pod, model string) (uint64, error)
	// HoldFor is how long messages of an unknown pod are held in case its
	// worker registers (then they are applied in order, see Kick). Default
	// 30s; zero means the default.
	HoldFor time.Duration
	// HoldMax bounds the held messages (all pods together); past it the
	// oldest is dropped. Default 1024; zero means the default.
	HoldMax int
	// HoldMaxBytes bounds the held messages' bytes (topic and payload
	// plus a fixed overhead each); past it the oldest are dropped, and a
	// message larger than it alone is not held. Default
	// DefaultHoldMaxBytes; zero means the default.
	HoldMaxBytes int64
	// MaxMessageBytes bounds a ZMQ message (each frame and their sum) on
	// every socket, bound or dialed: a peer that announces a larger one
	// is dropped before anything is allocated for it (zmqguard). Default
	// zmqguard.DefaultMaxMessageBytes (16 MiB); zero means the default.
	MaxMessageBytes int64
	// OnPeerDropped, when set, counts ZMQ peers dropped by the guard, by
	// reason (a zmqguard.Reason* value). Called from zmq4's goroutines.
	OnPeerDropped func(reason string)
	// MaxJump: a seq more than this above the last is a publisher restart,
	// not a gap (ordering.Seq). Default 0: ordering's default.
	MaxJump uint64
	// OnIngest, when set, counts ingestion outcomes: n events or messages
	// of worker (0 when none is known) refused or faulted for reason (an
	// ordering.Reject* or ordering.Fault* value). Called from Run's
	// goroutines.
	OnIngest func(worker uint64, reason string, n uint64)
	// Decode decodes a payload. Default: a kvevents.VLLMDecoder per
	// publisher.
	Decode DecodeFunc
	// StartID, when set, returns the last event id already assigned to w
	// (ids continue after it). Default: ids start at 1.
	StartID func(w kvevents.Worker) uint64
	// ReplayTimeout bounds one replay request; default 2s.
	ReplayTimeout time.Duration
	// OnBatch, when set, is called after each payload's events were handed
	// to the sink, with the batch's publish time (vLLM's ts, float seconds
	// since the epoch, engine clock; zero when the payload carries none)
	// and the number of events handed over. Called from Run's goroutines.
	OnBatch func(published time.Time, applied int)
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Stats counts what a Subscriber did.
type Stats struct {
	Messages    uint64 // ZMQ messages received
	Events      uint64 // events handed to the sink
	Blocks      uint64
	Gaps        uint64 // seq gaps detected
	Replayed    uint64 // messages recovered through replay
	Resyncs     uint64 // worker+ranks cleared: gap not coverable or engine restart
	Restarts    uint64 // publisher restarts (ordering.Seq): seq at or below the last, or far above
	DecodeError uint64 // undecodable payloads or events
	BlockSize   uint64 // payloads refused for a block-size mismatch
	SinkErrors  uint64
	UnknownPod  uint64 // bind-mode messages of a pod no worker has (held)
	HoldDropped uint64 // held messages dropped (never resolved within HoldFor, or HoldMax)
	Mismatch    uint64 // bind-mode messages whose topic model is not the worker's
	// UnknownGroup counts events of a KV cache group kind the router does
	// not model (kvevents.BatchInfo.UnknownGroups), skipped.
	UnknownGroup uint64
}

// Subscriber ingests ZMQ KV events into a Sink.
type Subscriber struct {
	cfg      Config
	sink     Sink
	log      *slog.Logger
	guard    *zmqguard.Guard
	hold     *bounds.Store // bind mode's held messages
	inflight *bounds.Store // bind mode's messages received, not yet handled

	bound atomic.Value // net.Addr

	mu   sync.Mutex
	pubs map[pubKey]*pubState // bind mode: per topic+socket; connect mode: per source+rank

	kick chan struct{}

	dyn dynamic // sources added at run time

	st struct {
		messages, events, blocks, gaps, replayed, resyncs, restarts, decErr, bsErr, sinkErr,
		unknownPod, holdDropped, mismatch, unknownGroup atomic.Uint64
	}
}

type pubKey struct {
	topic  string
	sock   int // bind mode: index in Binds
	worker kvevents.Worker
}

type pubState struct {
	seq     ordering.Seq
	nextID  uint64
	replay  string
	ranks   map[uint32]bool // ranks this publisher's payloads named (cleared on a restart)
	dec     *kvevents.VLLMDecoder
	scratch []kvevents.Event
}

// New returns a Subscriber; it opens no socket until Run.
func New(cfg Config, sink Sink) *Subscriber {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ReplayTimeout <= 0 {
		cfg.ReplayTimeout = 2 * time.Second
	}
	if cfg.HoldFor <= 0 {
		cfg.HoldFor = 30 * time.Second
	}
	if cfg.HoldMax <= 0 {
		cfg.HoldMax = 1024
	}
	if cfg.HoldMaxBytes <= 0 {
		cfg.HoldMaxBytes = DefaultHoldMaxBytes
	}
	s := &Subscriber{cfg: cfg, sink: sink, log: cfg.Logger, pubs: make(map[pubKey]*pubState),
		kick: make(chan struct{}, 1), hold: bounds.New("zmq_hold", int64(cfg.HoldMax), cfg.HoldMaxBytes)}
	maxMsg := cfg.MaxMessageBytes
	if maxMsg <= 0 {
		maxMsg = zmqguard.DefaultMaxMessageBytes
	}
	s.inflight = bounds.New("zmq_inflight", bindQueue, inflightMessages*maxMsg)
	s.guard = &zmqguard.Guard{Limits: zmqguard.Limits{MaxMessageBytes: maxMsg},
		OnDrop: func(reason string, remote net.Addr, err error) {
			s.log.Warn("ZMQ peer dropped", "remote", remote.String(), "reason", reason, "err", err)
			if cfg.OnPeerDropped != nil {
				cfg.OnPeerDropped(reason)
			}
		}}
	return s
}

// DefaultHoldMaxBytes is Config.HoldMaxBytes' default: four of the
// largest messages (zmqguard.DefaultMaxMessageBytes), or some thousands
// of ordinary batches (kilobytes each).
const DefaultHoldMaxBytes = 64 << 20

// inflightMessages is how many of the largest messages may wait for the
// bind loop (in bytes: 64 MiB by default); ordinary batches of kilobytes
// meet the count bound first.
const inflightMessages = 4

// InflightStore is the bind mode's messages received and not yet handled,
// as a bounds.Store ("zmq_inflight").
func (s *Subscriber) InflightStore() *bounds.Store { return s.inflight }

// HoldStore is the bind mode's hold of unknown pods' messages, as a
// bounds.Store ("zmq_hold") to register on a Prometheus registry.
func (s *Subscriber) HoldStore() *bounds.Store { return s.hold }

// guarded returns ctx carrying the Subscriber's frame guard: sockets
// created with it and given a zmqguard.Endpoint are bounded.
func (s *Subscriber) guarded(ctx context.Context) context.Context {
	return zmqguard.WithGuard(ctx, s.guard)
}

// Validate reports every problem of the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.BlockSize <= 0 {
		errs = append(errs, errors.New("zmqsub: block size required"))
	}
	if c.MaxMessageBytes < 0 {
		errs = append(errs, fmt.Errorf("zmqsub: max message bytes %d < 0", c.MaxMessageBytes))
	}
	if c.HoldMaxBytes < 0 {
		errs = append(errs, fmt.Errorf("zmqsub: hold max bytes %d < 0", c.HoldMaxBytes))
	}
	if len(c.Sources) == 0 && len(c.Binds) == 0 && !c.Dynamic {
		errs = append(errs, errors.New("zmqsub: no source endpoint and no bind endpoint"))
	}
	for _, b := range c.Binds {
		if _, _, err := splitEndpoint(b); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range c.Sources {
		if _, _, err := splitEndpoint(s.Endpoint); err != nil {
			errs = append(errs, err)
		}
		if s.Replay != "" {
			if _, _, err := splitEndpoint(s.Replay); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Stats returns the counters.
func (s *Subscriber) Stats() Stats {
	return Stats{Messages: s.st.messages.Load(), Events: s.st.events.Load(), Blocks: s.st.blocks.Load(),
		Gaps: s.st.gaps.Load(), Replayed: s.st.replayed.Load(),
		Resyncs: s.st.resyncs.Load(), Restarts: s.st.restarts.Load(), DecodeError: s.st.decErr.Load(),
		BlockSize: s.st.bsErr.Load(), SinkErrors: s.st.sinkErr.Load(), UnknownPod: s.st.unknownPod.Load(),
		HoldDropped: s.st.holdDropped.Load(), Mismatch: s.st.mismatch.Load(), UnknownGroup: s.st.unknownGroup.Load()}
}

// Run dials every source rank (and binds Config.Binds) and ingests until
// ctx is done; it returns nil then, or the first setup error.
func (s *Subscriber) Run(ctx context.Context) error {
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 1+len(s.cfg.Sources)*4)
	if len(s.cfg.Binds) > 0 {
		socks, err := s.listen(ctx)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() { defer wg.Done(); s.bindLoop(ctx, socks) }()
	}
	s.startDynamic(ctx)
	for i := range s.cfg.Sources {
		src := s.cfg.Sources[i]
		for r := 0; r < max(src.DPSize, 1); r++ {
			ep, _ := RankEndpoint(src.Endpoint, r)
			wg.Add(1)
			go func() {
				defer wg.Done()
				sub, err := s.dialSub(ctx, ep)
				if err != nil {
					if ctx.Err() == nil {
						errc <- fmt.Errorf("zmqsub: dial %s: %w", ep, err)
					}
					return
				}
				s.loop(ctx, sub, &src, uint32(r))
			}()
		}
	}
	<-ctx.Done()
	s.stopDynamic()
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	return nil
}

// BindAddrs returns the addresses Config.Binds listen on once Run has
// bound them (useful with port 0), or nil.
func (s *Subscriber) BindAddrs() []net.Addr {
	if a, ok := s.bound.Load().([]net.Addr); ok {
		return a
	}
	return nil
}

// dialSub dials a guarded SUB to ep (it retries until ctx is done and
// reconnects after a drop).
func (s *Subscriber) dialSub(ctx context.Context, ep string) (zmq4.Socket, error) {
	sub := zmq4.NewSub(s.guarded(ctx), zmq4.WithDialerRetry(100*time.Millisecond), zmq4.WithDialerMaxRetries(-1),
		zmq4.WithAutomaticReconnect(true))
	_ = sub.SetOption(zmq4.OptionSubscribe, "")
	if err := sub.Dial(zmqguard.Endpoint(ep)); err != nil {
		_ = sub.Close()
		return nil, err
	}
	return sub, nil
}

// loop receives on one dialed SUB socket (connect topology).
func (s *Subscriber) loop(ctx context.Context, sub zmq4.Socket, src *Source, rank uint32) {
	defer sub.Close()
	key := pubKey{worker: kvevents.Worker{ID: src.WorkerID, Rank: rank}}
	replay := ""
	if src.Replay != "" {
		replay, _ = RankEndpoint(src.Replay, int(rank))
	}
	for {
		msg, err := sub.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Debug("zmq recv", "err", err)
			continue
		}
		_, seq, payload, ok := s.frames(msg, src.WorkerID)
		if ok {
			s.handle(ctx, key, replay, seq, payload)
		}
	}
}

// frames splits [topic, seq, payload] (counting a malformed message).
func (s *Subscriber) frames(msg zmq4.Msg, worker uint64) (topic string, seq int64, payload []byte, ok bool) {
	s.st.messages.Add(1)
	if len(msg.Frames) < 3 || len(msg.Frames[len(msg.Frames)-2]) != 8 {
		s.st.decErr.Add(1)
		s.count(worker, ordering.RejectDecode, 1)
		return "", 0, nil, false
	}
	seqb, payload := msg.Frames[len(msg.Frames)-2], msg.Frames[len(msg.Frames)-1]
	return string(msg.Frames[0]), int64(binary.BigEndian.Uint64(seqb)), payload, true
}

func (s *Subscriber) count(worker uint64, reason string, n uint64) {
	if s.cfg.OnIngest != nil {
		s.cfg.OnIngest(worker, reason, n)
	}
}

func (s *Subscriber) state(key pubKey, replay string) *pubState {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.pubs[key]
	if ps == nil {
		ps = &pubState{replay: replay, seq: ordering.Seq{MaxJump: s.cfg.MaxJump}}
		if s.cfg.StartID != nil {
			ps.nextID = s.cfg.StartID(key.worker)
		}
		s.pubs[key] = ps
	}
	return ps
}

// handle applies one message of publisher key, recovering gaps and
// clearing the worker+rank on a restart (ordering.Seq's rules).
func (s *Subscriber) handle(ctx context.Context, key pubKey, replay string, seq int64, payload []byte) {
	ps := s.state(key, replay)
	last, _ := ps.seq.Last()
	switch ps.seq.Classify(seq) {
	case ordering.SeqRestart:
		s.st.restarts.Add(1)
		s.count(key.worker.ID, ordering.FaultRestart, 1)
		s.log.Warn("engine restarted (seq started over): clearing worker", "worker", key.worker.String(), "seq", seq, "last_seq", last)
		s.clear(ps, key.worker)
	case ordering.SeqGap:
		s.st.gaps.Add(1)
		s.count(key.worker.ID, ordering.FaultGap, 1)
		if !s.replay(ctx, ps, key, last+1, seq) {
			s.log.Warn("KV event gap not recoverable: clearing worker", "worker", key.worker.String(), "from_seq", last+1, "to_seq", seq-1)
			s.count(key.worker.ID, ordering.FaultResync, 1)
			s.clear(ps, key.worker)
		}
	}
	s.apply(ps, key.worker, payload)
	ps.seq.Replayed(seq) // the replay moved it; this message is the last
}

// clear emits a Cleared for every rank of w the publisher named (at least
// w's own) and counts a resync.
func (s *Subscriber) clear(ps *pubState, w kvevents.Worker) {
	s.st.resyncs.Add(1)
	ranks := []uint32{w.Rank}
	for r := range ps.ranks {
		if r != w.Rank {
			ranks = append(ranks, r)
		}
	}
	slices.Sort(ranks)
	for _, r := range ranks {
		ps.nextID++
		ev := kvevents.Event{WorkerID: w.ID, DPRank: r, EventID: ps.nextID, Kind: kvevents.KindCleared}
		if err := s.sink.Apply(&ev); err != nil {
			s.st.sinkErr.Add(1)
		}
		s.st.events.Add(1)
	}
}

// apply decodes a payload and hands its events to the sink with fresh ids.
func (s *Subscriber) apply(ps *pubState, w kvevents.Worker, payload []byte) {
	var evs []kvevents.Event
	var err error
	if s.cfg.Decode != nil {
		evs, err = s.cfg.Decode(ps.scratch[:0], payload, w, s.cfg.BlockSize)
	} else {
		if ps.dec == nil {
			ps.dec, err = kvevents.NewVLLMDecoder(kvevents.VLLMConfig{BlockSize: s.cfg.BlockSize, WorkerID: w.ID, DPRank: w.Rank})
		}
		if err == nil {
			var info kvevents.BatchInfo
			evs, info, err = ps.dec.DecodeBatch(ps.scratch[:0], payload)
			if n := uint64(info.UnknownGroups); n > 0 {
				s.st.unknownGroup.Add(n)
				s.count(w.ID, ordering.RejectUnknownGroup, n)
			}
		}
	}
	if err != nil {
		var bse *kvevents.BlockSizeError
		if errors.As(err, &bse) {
			s.st.bsErr.Add(1)
			s.count(w.ID, ordering.RejectBlockSize, 1)
			s.log.Error("KV event refused: block size mismatch", "worker", w.String(), "engine_block_size", bse.Got, "router_block_size", bse.Want)
		} else {
			s.st.decErr.Add(1)
			s.count(w.ID, ordering.RejectDecode, 1)
			s.log.Warn("undecodable KV event payload", "worker", w.String(), "err", err)
		}
	}
	for i := range evs {
		ev := &evs[i]
		ev.WorkerID = w.ID
		if ev.DPRank != w.Rank {
			if ps.ranks == nil {
				ps.ranks = map[uint32]bool{}
			}
			ps.ranks[ev.DPRank] = true
		}
		ps.nextID++
		ev.EventID = ps.nextID
		if err := s.sink.Apply(ev); err != nil {
			s.st.sinkErr.Add(1)
		}
		s.st.events.Add(1)
		s.st.blocks.Add(uint64(ev.NumBlocks()))
	}
	if s.cfg.OnBatch != nil {
		ts, _ := BatchTime(payload)
		s.cfg.OnBatch(ts, len(evs))
	}
	clear(evs)
	ps.scratch = evs[:0]
}

// BatchTime reads the ts (seconds since the epoch, float or integer) that
// leads a msgpack array-form vLLM/SGLang batch [ts, events, dp_rank?]. ok
// is false for any other shape.
func BatchTime(payload []byte) (t time.Time, ok bool) {
	if len(payload) == 0 {
		return time.Time{}, false
	}
	p := payload
	switch c := p[0]; {
	case c >= 0x91 && c <= 0x9f:
		p = p[1:]
	case c == 0xdc && len(p) >= 3:
		p = p[3:]
	case c == 0xdd && len(p) >= 5:
		p = p[5:]
	default:
		return time.Time{}, false
	}
	if len(p) == 0 {
		return time.Time{}, false
	}
	var sec float64
	switch c := p[0]; {
	case c <= 0x7f:
		sec = float64(c)
	case c == 0xcb && len(p) >= 9:
		sec = math.Float64frombits(binary.BigEndian.Uint64(p[1:9]))
	case c == 0xca && len(p) >= 5:
		sec = float64(math.Float32frombits(binary.BigEndian.Uint32(p[1:5])))
	case c == 0xce && len(p) >= 5:
		sec = float64(binary.BigEndian.Uint32(p[1:5]))
	case c == 0xcf && len(p) >= 9:
		sec = float64(binary.BigEndian.Uint64(p[1:9]))
	case c == 0xd2 && len(p) >= 5:
		sec = float64(int32(binary.BigEndian.Uint32(p[1:5])))
	case c == 0xd3 && len(p) >= 9:
		sec = float64(int64(binary.BigEndian.Uint64(p[1:9])))
	default:
		return time.Time{}, false
	}
	if !(sec > 0) || sec > 1e11 || math.IsInf(sec, 0) {
		return time.Time{}, false
	}
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(frac*1e9)), true
}

// replay fetches seqs [from, to) from ps.replay and applies them; it
// reports whether the whole range was covered.
func (s *Subscriber) replay(ctx context.Context, ps *pubState, key pubKey, from, to int64) bool {
	if ps.replay == "" {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.ReplayTimeout)
	defer cancel()
	d := zmq4.NewDealer(s.guarded(rctx), zmq4.WithDialerMaxRetries(3), zmq4.WithDialerRetry(50*time.Millisecond))
	defer d.Close()
	if err := d.Dial(zmqguard.Endpoint(ps.replay)); err != nil {
		s.log.Warn("replay dial failed", "endpoint", ps.replay, "err", err)
		return false
	}
	var req [8]byte
	binary.BigEndian.PutUint64(req[:], uint64(from))
	if err := d.Send(zmq4.NewMsg(req[:])); err != nil {
		return false
	}
	next := from
	for {
		m, err := d.Recv()
		if err != nil {
			s.log.Warn("replay recv failed", "endpoint", ps.replay, "err", err)
			return false
		}
		if len(m.Frames) < 2 {
			return false
		}
		seqb, payload := m.Frames[len(m.Frames)-2], m.Frames[len(m.Frames)-1]
		if len(seqb) != 8 {
			return false
		}
		seq := int64(binary.BigEndian.Uint64(seqb))
		if seq == -1 {
			return next >= to
		}
		if seq < next || seq >= to {
			continue // before the gap (already applied) or the live message itself
		}
		if seq > next {
			return false // the replay buffer no longer holds the start of the gap
		}
		s.apply(ps, key.worker, payload)
		s.st.replayed.Add(1)
		ps.seq.Replayed(seq)
		next = seq + 1
	}
}

// ParseTopic splits "kv@<pod>@<model>" (the topic vLLM's kv_events_config
// "topic" is set to in llm-d's centralized mode, and llm-d-inference-sim's;
// <pod> is the pod's IP or host:port, <model> may itself contain '@'). A
// topic "kv@<pod>" has an empty model.
func ParseTopic(topic string) (pod, model string, ok bool) {
	parts := strings.SplitN(topic, "@", 3)
	if len(parts) < 2 || parts[0] != "kv" || parts[1] == "" {
		return "", "", false
	}
	if len(parts) == 3 {
		model = parts[2]
	}
	return parts[1], model, true
}

// TopicHash is the default worker id of a pod address: XXH3 of it, limited
// to 53 bits so it survives JSON clients that use doubles.
func TopicHash(pod string) uint64 { return xxh3.HashString(pod) & (1<<53 - 1) }

// RankEndpoint returns the endpoint of data-parallel rank r: port + r.
func RankEndpoint(ep string, r int) (string, error) {
	host, port, err := splitEndpoint(ep)
	if err != nil {
		return "", err
	}
	if r == 0 {
		return ep, nil
	}
	return "tcp://" + net.JoinHostPort(host, strconv.Itoa(port+r)), nil
}

func splitEndpoint(ep string) (string, int, error) {
	u, err := url.Parse(ep)
	if err != nil || u.Scheme != "tcp" {
		return "", 0, fmt.Errorf("zmqsub: endpoint %q: want tcp://host:port", ep)
	}
	h, p, err := net.SplitHostPort(u.Host)
	if err != nil {
		return "", 0, fmt.Errorf("zmqsub: endpoint %q: %w", ep, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("zmqsub: endpoint %q: bad port", ep)
	}
	return h, port, nil
}
