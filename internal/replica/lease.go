package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/nats-io/nats.go/jetstream"
)

// LeaseConfig configures a Lease.
type LeaseConfig struct {
	// Bucket is the NATS KV bucket; default "kvrouter_replicas".
	Bucket string
	// Key names the lease in the bucket; default "snapshot-writer".
	Key string
	// Holder identifies this contender (the value written). Required.
	Holder string
	// TTL: a lease not renewed for this long is taken over by another
	// contender (and expires in the bucket, whose TTL it also is).
	// Default 10s.
	TTL time.Duration
	// Renew is the renewal and polling interval; default TTL/3 (0 means
	// that). Must be below TTL.
	Renew time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
}

func (c *LeaseConfig) setDefaults() {
	if c.Bucket == "" {
		c.Bucket = "kvrouter_replicas"
	}
	if c.Key == "" {
		c.Key = "snapshot-writer"
	}
	if c.TTL <= 0 {
		c.TTL = 10 * time.Second
	}
	if c.Renew <= 0 {
		c.Renew = c.TTL / 3
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem of c (after defaults).
func (c LeaseConfig) Validate() error {
	var errs []error
	if c.Holder == "" {
		errs = append(errs, errors.New("replica: lease holder id is empty"))
	}
	if c.Renew >= c.TTL {
		errs = append(errs, fmt.Errorf("replica: lease renew interval %v must be below the TTL %v", c.Renew, c.TTL))
	}
	return errors.Join(errs...)
}

// LeaseStats counts what a Lease did.
type LeaseStats struct {
	Acquired, Lost, Released uint64
	// Errors counts bucket operations that got no definitive answer (the
	// bucket or its stream gone, NATS unreachable, timeouts); each one
	// drops the cached bucket handle, so the next tick creates the bucket
	// again when it is gone.
	Errors uint64
}

// Lease is one replica's candidacy for a lease held by one replica at a
// time, in a NATS KV bucket (DESIGN.md §9: the snapshot writer).
//
// A contender creates the key when it is absent (never held, released,
// or expired by the bucket TTL) or takes it over, compare-and-swap on the
// revision, when the revision it sees has not changed for TTL on its own
// clock (the holder stopped renewing). The holder renews every Renew,
// compare-and-swap on its revision; a definitive refusal (someone else
// holds it), or TTL - Renew without a successful renewal counted from when
// the last successful one was sent, ends its tenure. Measuring from the
// send on the holder's side and from the first sight on the contenders'
// keeps the two tenures at least Renew apart, up to clock-rate
// differences; were they to overlap, the cost is a duplicate snapshot,
// nothing worse.
//
// Safe for concurrent use; NewLease does no I/O, Run campaigns.
type Lease struct {
	conn *eventplane.Conn
	cfg  LeaseConfig

	held                               atomic.Bool
	acquired, lost, released, errCount atomic.Uint64
	kvMu                               sync.Mutex
	kv                                 jetstream.KeyValue
}

// NewLease returns a contender for the lease on conn.
func NewLease(conn *eventplane.Conn, cfg LeaseConfig) (*Lease, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Lease{conn: conn, cfg: cfg}, nil
}

// Held reports whether this contender holds the lease now.
func (l *Lease) Held() bool { return l.held.Load() }

// Stats returns the counters.
func (l *Lease) Stats() LeaseStats {
	return LeaseStats{Acquired: l.acquired.Load(), Lost: l.lost.Load(), Released: l.released.Load(), Errors: l.errCount.Load()}
}

// failed counts an operation on kv that got no definitive answer and
// drops the cached handle: after NATS lost its state (a server restarted
// with a fresh store, the bucket deleted) the handle names a bucket that
// no longer exists, and only bucket() creates it again. A definitive
// answer (key absent, revision moved) is the campaign's business.
func (l *Lease) failed(kv jetstream.KeyValue, err error) {
	if err == nil || errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyExists) ||
		errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return
	}
	n := l.errCount.Add(1)
	l.kvMu.Lock()
	if l.kv == kv {
		l.kv = nil
	}
	l.kvMu.Unlock()
	// Every error counts; the log says when trouble starts and then
	// every 100th time, not every Renew.
	if n == 1 || n%100 == 0 {
		l.cfg.Logger.Warn("replica lease bucket failed; recreating it", "lease", l.cfg.Key, "bucket", l.cfg.Bucket, "errors", n, "err", err)
	}
}

func (l *Lease) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	l.kvMu.Lock()
	defer l.kvMu.Unlock()
	if l.kv != nil {
		return l.kv, nil
	}
	replicas, err := l.conn.Replicas(ctx, "KV_"+l.cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("replica: lease bucket %s: %w", l.cfg.Bucket, err)
	}
	kv, err := l.conn.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: l.cfg.Bucket, TTL: l.cfg.TTL, History: 1, Replicas: replicas,
		Description: "kvrouter replica leases"})
	if err != nil {
		return nil, fmt.Errorf("replica: lease bucket %s: %w", l.cfg.Bucket, err)
	}
	l.kv = kv
	return kv, nil
}

// Holder returns the current holder's id ("" when nobody holds it).
func (l *Lease) Holder(ctx context.Context) (string, error) {
	kv, err := l.bucket(ctx)
	if err != nil {
		return "", err
	}
	e, err := kv.Get(ctx, l.cfg.Key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("replica: lease %s: %w", l.cfg.Key, err)
	}
	return string(e.Value()), nil
}

// Run campaigns until ctx is done. While this contender holds the lease,
// lead runs (on its own goroutine) with a context that ends when the lease
// is lost or ctx is done; Run waits for lead to return before it campaigns
// again, and releases a held lease on the way out so another contender
// takes over at once.
func (l *Lease) Run(ctx context.Context, lead func(ctx context.Context)) error {
	t := time.NewTicker(l.cfg.Renew)
	defer t.Stop()
	var (
		rev      uint64    // our revision while held
		seenRev  uint64    // another holder's revision
		seenAt   time.Time // when seenRev was first seen
		stopLead = func() {}
	)
	// expiry ends a tenure at TTL - Renew after the last successful
	// renewal was sent, a Renew ahead of the earliest takeover, whatever
	// the ticks do.
	expiry := time.NewTimer(time.Hour)
	expiry.Stop()
	renewed := func(r uint64, at time.Time) {
		rev = r
		expiry.Reset(time.Until(at.Add(l.cfg.TTL - l.cfg.Renew)))
	}
	start := func(r uint64, at time.Time) {
		renewed(r, at)
		l.held.Store(true)
		l.acquired.Add(1)
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); lead(lctx) }()
		stopLead = func() { cancel(); <-done; stopLead = func() {} }
		l.cfg.Logger.Info("replica lease acquired", "lease", l.cfg.Key, "holder", l.cfg.Holder)
	}
	drop := func(why string, err error) {
		expiry.Stop()
		stopLead()
		l.held.Store(false)
		l.lost.Add(1)
		seenRev = 0
		l.cfg.Logger.Warn("replica lease lost", "lease", l.cfg.Key, "holder", l.cfg.Holder, "why", why, "err", err)
	}
	defer func() {
		if !l.held.Load() {
			return
		}
		stopLead()
		l.held.Store(false)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.Renew)
		defer cancel()
		if kv, err := l.bucket(rctx); err == nil && kv.Delete(rctx, l.cfg.Key, jetstream.LastRevision(rev)) == nil {
			l.released.Add(1)
		}
	}()
	for {
		now := time.Now()
		kv, err := l.bucket(ctx)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				l.failed(nil, err)
			}
		case l.held.Load():
			r, err := kv.Update(ctx, l.cfg.Key, []byte(l.cfg.Holder), rev)
			switch {
			case err == nil:
				renewed(r, now)
			case errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyNotFound) ||
				errors.Is(err, jetstream.ErrKeyExists):
				// ErrKeyExists: our revision is gone (the bucket was
				// recreated empty, or someone else wrote the key).
				drop("taken over", err)
			default:
				l.failed(kv, err)
			}
		default:
			e, err := kv.Get(ctx, l.cfg.Key)
			switch {
			case errors.Is(err, jetstream.ErrKeyNotFound):
				r, err := kv.Create(ctx, l.cfg.Key, []byte(l.cfg.Holder))
				if err == nil {
					start(r, now)
				} else {
					l.failed(kv, err)
				}
			case err != nil:
				l.failed(kv, err)
			case e.Revision() != seenRev:
				seenRev, seenAt = e.Revision(), now
			case now.Sub(seenAt) >= l.cfg.TTL:
				// The holder stopped renewing: take over, unless it
				// renewed meanwhile (the swap fails then).
				if r, err := kv.Update(ctx, l.cfg.Key, []byte(l.cfg.Holder), seenRev); err == nil {
					start(r, now)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-expiry.C:
			if l.held.Load() {
				drop("no renewal within the TTL", nil)
			}
		}
	}
}
