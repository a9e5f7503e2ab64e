package loadsync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// Kind is what a Message reports.
type Kind uint8

const (
	KindRoute       Kind = iota + 1 // a request was routed to Worker
	KindPrefillDone                 // its first token came back
	KindFree                        // it finished, failed or was cancelled
	KindAffinity                    // Session is bound to Worker (TTL)
	KindHeartbeat                   // the origin is alive (no other field)
)

// Message is one load or affinity update.
type Message struct {
	Kind    Kind   `json:"k"`
	Request string `json:"r,omitempty"`
	Worker  uint64 `json:"w"`
	Rank    uint32 `json:"dp,omitempty"`
	// KindRoute: the request's prompt local hashes (decode blocks,
	// ref-counted by the tracker), prompt length, and tokens to prefill.
	Locals        []uint64 `json:"b,omitempty"`
	ISL           int      `json:"isl,omitempty"`
	PrefillTokens int      `json:"pt,omitempty"`
	// OutputBlocks are decode blocks charged for the expected output.
	OutputBlocks int `json:"ob,omitempty"`
	// KindAffinity.
	Session string        `json:"s,omitempty"`
	TTL     time.Duration `json:"ttl,omitempty"`
}

type batch struct {
	Origin string    `json:"o"`
	Msgs   []Message `json:"m"`
}

// Bounds on a received batch (a peer, or anyone who may publish on the
// subject, sends it): the subject's messages are at most NATS's max
// payload (1 MiB by default, the server's to raise), and the decoder
// holds its own line so a raised server limit cannot hand it more.
const (
	// MaxBatchBytes bounds one received batch's JSON.
	MaxBatchBytes = 8 << 20
	// MaxOriginBytes bounds the origin id (a replica id and a random
	// suffix).
	MaxOriginBytes = 256
	// maxSessionBytes bounds an affinity message's session id (the
	// frontend refuses longer ones before they are bound).
	maxSessionBytes = 4096
)

var errBadBatch = errors.New("loadsync: bad batch")

// decodeBatch decodes one received batch within the bounds above: a
// batch beyond them, or with a message of an unknown kind or a negative
// count, is refused whole (counted in Stats.Bad).
func decodeBatch(data []byte) (batch, error) {
	var b batch
	if len(data) > MaxBatchBytes {
		return batch{}, fmt.Errorf("%w: %d bytes > %d", errBadBatch, len(data), MaxBatchBytes)
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return batch{}, fmt.Errorf("%w: %w", errBadBatch, err)
	}
	if b.Origin == "" || len(b.Origin) > MaxOriginBytes {
		return batch{}, fmt.Errorf("%w: origin of %d bytes", errBadBatch, len(b.Origin))
	}
	for i := range b.Msgs {
		m := &b.Msgs[i]
		if m.Kind < KindRoute || m.Kind > KindHeartbeat || m.ISL < 0 || m.PrefillTokens < 0 ||
			m.OutputBlocks < 0 || m.TTL < 0 || len(m.Session) > maxSessionBytes {
			return batch{}, fmt.Errorf("%w: message %d out of range", errBadBatch, i)
		}
	}
	return b, nil
}

// Applier is the router side: it applies another replica's updates.
type Applier interface {
	ApplyRemote(origin string, m *Message)
}

// ApplierFunc adapts a function to Applier.
type ApplierFunc func(origin string, m *Message)

// ApplyRemote calls f.
func (f ApplierFunc) ApplyRemote(origin string, m *Message) { f(origin, m) }

// Config configures a Sync.
type Config struct {
	// Subject; default "kvrouter.load".
	Subject string
	// Origin identifies this replica; default a random id.
	Origin string
	// MaxBatch; default 256.
	MaxBatch int
	// MaxDelay; default 1ms.
	MaxDelay time.Duration
	// Queue capacity; default 65536. Publish drops (counted) when full.
	Queue int
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Stats counts what a Sync did.
type Stats struct {
	Sent, Received, Dropped, Batches, Bad uint64
}

// Sync publishes and receives load updates.
type Sync struct {
	nc  *nats.Conn
	cfg Config
	app Applier
	in  chan Message

	sent, recv, dropped, batches, bad atomic.Uint64
}

// New returns a Sync on nc applying others' updates to app.
func New(nc *nats.Conn, cfg Config, app Applier) *Sync {
	if cfg.Subject == "" {
		cfg.Subject = "kvrouter.load"
	}
	if cfg.Origin == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.Origin = hex.EncodeToString(b[:])
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 256
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = time.Millisecond
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 65536
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Sync{nc: nc, cfg: cfg, app: app, in: make(chan Message, cfg.Queue)}
}

// Origin is this replica's id.
func (s *Sync) Origin() string { return s.cfg.Origin }

// Publish queues m; never blocks (a full queue drops it, counted).
func (s *Sync) Publish(m Message) {
	select {
	case s.in <- m:
	default:
		s.dropped.Add(1)
	}
}

// Stats returns the counters.
func (s *Sync) Stats() Stats {
	return Stats{Sent: s.sent.Load(), Received: s.recv.Load(), Dropped: s.dropped.Load(),
		Batches: s.batches.Load(), Bad: s.bad.Load()}
}

// Run subscribes and publishes until ctx is done.
func (s *Sync) Run(ctx context.Context) error {
	sub, err := s.nc.Subscribe(s.cfg.Subject, func(m *nats.Msg) {
		b, err := decodeBatch(m.Data)
		if err != nil {
			s.bad.Add(1)
			return
		}
		if b.Origin == s.cfg.Origin {
			return
		}
		for i := range b.Msgs {
			s.recv.Add(1)
			s.app.ApplyRemote(b.Origin, &b.Msgs[i])
		}
	})
	if err != nil {
		return fmt.Errorf("loadsync: subscribe: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	b := batch{Origin: s.cfg.Origin}
	flush := func() {
		if len(b.Msgs) == 0 {
			return
		}
		data, err := json.Marshal(&b)
		if err == nil {
			err = s.nc.Publish(s.cfg.Subject, data)
		}
		if err != nil {
			s.dropped.Add(uint64(len(b.Msgs)))
		} else {
			s.sent.Add(uint64(len(b.Msgs)))
			s.batches.Add(1)
		}
		b.Msgs = b.Msgs[:0]
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			flush()
			return nil
		case m := <-s.in:
			if len(b.Msgs) == 0 {
				timer.Reset(s.cfg.MaxDelay)
			}
			b.Msgs = append(b.Msgs, m)
			if len(b.Msgs) >= s.cfg.MaxBatch {
				flush()
				timer.Stop()
			}
		case <-timer.C:
			flush()
		}
	}
}
