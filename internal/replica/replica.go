package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/snapshot"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/ordering"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// Options are a Replica's collaborators: the prefix index it keeps.
// RouterOptions builds them for a router.Router.
type Options struct {
	// Sink receives the KV events, restored and streamed (the router's
	// ApplyEvent, through the index's sticky writers). Required.
	Sink eventplane.Sink
	// Flush waits until everything handed to Sink is applied
	// (indexer.Concurrent.Flush of every tier). nil: Sink's own Flush when
	// it is an eventplane.Flusher, else nothing (Sink applies inline).
	Flush func(ctx context.Context) error
	// Dump returns the whole index, every tier, for a snapshot. Required
	// unless Config.SnapshotInterval is 0.
	Dump func() []kvevents.Event
	// Clear empties the index before a rebuild (the stream restarted).
	// Required.
	Clear func()
	// SubscriberEvents are handed to the stream subscriber (metrics).
	SubscriberEvents eventplane.SubscriberEvents
}

// Status is what /readyz reports.
type Status struct {
	// Ready: the restored snapshot and the stream up to where it ended
	// when this life began are applied to the index (not merely
	// received). It goes false again while rebuilding after a stream
	// restart.
	Ready bool
	// Lag is the stream messages (of the consumed subjects) not yet
	// applied: StreamLast - Applied, as of the last poll.
	Lag uint64
	// Applied is the last stream sequence handed to the index;
	// StreamFirst and StreamLast bound the stream (last poll).
	Applied, StreamFirst, StreamLast uint64
	// Restored is the sequence of the snapshot restored (0: none), with
	// RestoredEvents events.
	Restored       uint64
	RestoredEvents int
	// LeaseHeld: this replica writes the snapshots now; Snapshots is how
	// many it wrote.
	LeaseHeld bool
	Snapshots uint64
	// LeaseErrors counts lease bucket operations that got no definitive
	// answer (LeaseStats.Errors); LastSnapshot is when this replica last
	// wrote a snapshot (zero: never); SnapshotsSkipped counts unreadable
	// snapshot objects passed over by restores (snapshot.Stats.Skipped).
	LeaseErrors      uint64
	LastSnapshot     time.Time
	SnapshotsSkipped uint64
	// Resets counts stream restarts seen (each one cleared the index and
	// rebuilt it).
	Resets uint64
	// Resyncs counts worker+ranks cleared in this life because their
	// event ids jumped over a gap the stream could not fill (events lost,
	// e.g. to retention while this replica lagged behind it).
	Resyncs uint64
	// Detail says what is going on in one line (and any loss of events
	// that no snapshot covers).
	Detail string
}

// String is the /readyz body.
func (s Status) String() string {
	state := "catching up"
	if s.Ready {
		state = "ready"
	}
	return fmt.Sprintf("%s: lag=%d applied=%d stream=%d..%d restored=%d lease=%v snapshots=%d resets=%d resyncs=%d: %s",
		state, s.Lag, s.Applied, s.StreamFirst, s.StreamLast, s.Restored, s.LeaseHeld, s.Snapshots, s.Resets, s.Resyncs, s.Detail)
}

// errStreamReset ends a life of the subscriber: the stream restarted.
var errStreamReset = errors.New("replica: KV event stream restarted")

// Replica keeps a router's prefix index converged with the KV event
// stream (DESIGN.md §9): it restores the newest snapshot, replays the
// stream after it, reports ready once both are applied, follows the
// stream, competes for the snapshot writer's lease and, holding it,
// writes a snapshot every SnapshotInterval. Safe for concurrent use; New
// does no I/O, Run does the work.
type Replica struct {
	conn  *eventplane.Conn
	cfg   Config
	opts  Options
	snaps *snapshot.Manager
	lease *Lease // nil when SnapshotInterval is 0

	ready     chan struct{}
	readyOnce sync.Once
	snapshots atomic.Uint64
	// lastSnapshot is when the last snapshot was written (unix ns; 0 never).
	lastSnapshot atomic.Int64

	mu       sync.Mutex
	sub      *eventplane.Subscriber
	streamID string // identity of the stream this life follows
	st       Status
	saved    uint64 // sequence of this replica's last snapshot

	behind int // consecutive polls with the stream's last sequence below the applied one (Run's goroutine only)
}

// behindPolls is how many consecutive status polls must see the stream's
// last sequence below the applied one, with the stream's identity
// unchanged, before the stream counts as restarted. NB: during a NATS
// cluster failover the new leader briefly reports a last sequence a few
// messages behind what this replica applied; a recreated stream changes
// its identity and is acted on at once.
const behindPolls = 5

// New returns a Replica on conn; it does no I/O.
func New(conn *eventplane.Conn, cfg Config, opts Options) (*Replica, error) {
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if opts.Sink == nil || opts.Clear == nil {
		errs = append(errs, errors.New("replica: Options.Sink and Options.Clear are required"))
	}
	if cfg.SnapshotInterval > 0 && opts.Dump == nil {
		errs = append(errs, errors.New("replica: Options.Dump is required to write snapshots"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	if opts.Flush == nil {
		if f, ok := opts.Sink.(eventplane.Flusher); ok {
			opts.Flush = f.Flush
		} else {
			opts.Flush = func(context.Context) error { return nil }
		}
	}
	r := &Replica{conn: conn, cfg: cfg, opts: opts, ready: make(chan struct{}),
		snaps: snapshot.NewManager(conn, snapshot.Config{Bucket: cfg.SnapshotBucket, Keep: cfg.SnapshotKeep,
			MaxBytes: cfg.SnapshotMaxBytes, Logger: cfg.Logger})}
	r.st.Detail = "starting"
	if cfg.SnapshotInterval > 0 {
		l, err := NewLease(conn, r.leaseConfig())
		if err != nil {
			return nil, err
		}
		r.lease = l
	}
	return r, nil
}

// ID is this replica's id.
func (r *Replica) ID() string { return r.cfg.ID }

// Ready is closed the first time the replica is caught up (see
// Status.Ready, which also reports rebuilds after it).
func (r *Replica) Ready() <-chan struct{} { return r.ready }

// Status returns the readiness, lag and counters; it does no I/O.
func (r *Replica) Status() Status {
	r.mu.Lock()
	s := r.st
	sub := r.sub
	r.mu.Unlock()
	if sub != nil {
		ss := sub.Stats()
		s.Applied = max(s.Applied, ss.StreamSeq)
		s.Resyncs = ss.Order.Resyncs
	}
	s.Lag = 0
	if s.StreamLast > s.Applied {
		s.Lag = s.StreamLast - s.Applied
	}
	s.Snapshots = r.snapshots.Load()
	if at := r.lastSnapshot.Load(); at != 0 {
		s.LastSnapshot = time.Unix(0, at)
	}
	s.SnapshotsSkipped = r.snaps.Stats().Skipped
	if r.lease != nil {
		s.LeaseHeld = r.lease.Held()
		s.LeaseErrors = r.lease.Stats().Errors
	}
	return s
}

// Forget drops a worker's dedup state in the subscriber (it left the
// fleet; its next life may restart event ids).
func (r *Replica) Forget(worker uint64) {
	r.mu.Lock()
	sub := r.sub
	r.mu.Unlock()
	if sub != nil {
		sub.Forget(worker)
	}
}

// Snapshots is the snapshot store (for tools and tests).
func (r *Replica) Snapshots() *snapshot.Manager { return r.snaps }

// Run follows the stream (and, with SnapshotInterval > 0, competes for the
// snapshot writer's lease) until ctx is done; it returns nil then, or the
// error that stopped it.
func (r *Replica) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	if r.lease != nil {
		g.Go(func() error { return r.lease.Run(gctx, r.writeSnapshots) })
	}
	g.Go(func() error {
		fresh := false
		for {
			err := r.life(gctx, fresh)
			if gctx.Err() != nil {
				return nil
			}
			if !errors.Is(err, errStreamReset) {
				return err
			}
			r.opts.Clear()
			fresh = true
		}
	})
	return g.Wait()
}

func (r *Replica) setStatus(f func(s *Status)) {
	r.mu.Lock()
	f(&r.st)
	r.mu.Unlock()
}

// stream reads the stream's state, retrying until it answers or ctx is
// done. Its CachedInfo is the state as of this call (JetStream's Stream
// asks the server for it; Info would ask again).
func (r *Replica) stream(ctx context.Context) (jetstream.Stream, error) {
	backoff := 50 * time.Millisecond
	for {
		st, err := r.conn.JS.Stream(ctx, r.conn.Stream().Name)
		if err == nil {
			return st, nil
		}
		r.setStatus(func(s *Status) { s.Detail = "waiting for the KV event stream: " + err.Error() })
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func streamIdentity(info *jetstream.StreamInfo) string {
	return info.Created.UTC().Format(time.RFC3339Nano)
}

// life restores (unless fresh), subscribes, reports ready once caught up
// and follows the stream until ctx is done or the stream restarts.
func (r *Replica) life(ctx context.Context, fresh bool) error {
	began := time.Now()
	st, err := r.stream(ctx)
	if err != nil {
		return err
	}
	info := st.CachedInfo()
	r.observe(info, info.State.LastSeq)
	r.setStatus(func(s *Status) { s.Ready, s.Applied, s.Detail = false, 0, "restoring the newest snapshot" })
	// restore reads the stream again when the snapshot is ahead of this
	// read: st is the newest read from here on.
	pos, restored, notes, st, err := r.restore(ctx, st, fresh)
	if err != nil {
		return err
	}
	info = st.CachedInfo()
	id := streamIdentity(info)
	if first := info.State.FirstSeq; info.State.Msgs > 0 && pos.StreamSeq+1 < first {
		// Retention dropped messages no snapshot covers: the index misses
		// whatever they held (the subscriber clears the workers whose
		// event ids jump). Snapshots exist to prevent this.
		n := first - pos.StreamSeq - 1
		notes = append(notes, fmt.Sprintf("stream retention dropped %d messages (seq %d..%d) no snapshot covers", n, pos.StreamSeq+1, first-1))
		r.cfg.Logger.Warn("KV events lost to stream retention before this replica's snapshot", "messages", n,
			"snapshot_seq", pos.StreamSeq, "stream_first_seq", first)
	}
	sub := eventplane.NewSubscriber(r.conn, flushSink{r.opts.Sink, r.opts.Flush}, eventplane.SubscriberConfig{
		Model: r.cfg.Model, Start: pos, GapTimeout: r.cfg.GapTimeout, Events: r.opts.SubscriberEvents, Logger: r.cfg.Logger,
		// After a stream reset the publishers keep their event ids: their
		// first id on the new stream is the baseline, not a gap.
		AcceptFirst: fresh})
	r.mu.Lock()
	r.sub, r.streamID = sub, id
	r.st.Ready, r.st.Applied, r.st.Restored, r.st.RestoredEvents = false, pos.StreamSeq, pos.StreamSeq, restored
	r.st.Detail = strings.Join(append([]string{"replaying the stream"}, notes...), "; ")
	r.mu.Unlock()
	r.observe(info, r.lastSeq(ctx, st))

	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sub.Run(sctx) }()
	defer func() {
		cancel()
		<-done
		r.mu.Lock()
		r.sub = nil // a rebuild starts over; nothing reads the old one
		r.mu.Unlock()
	}()
	tick := time.NewTicker(r.cfg.StatusInterval)
	defer tick.Stop()
	readyC := sub.Ready()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			done <- err // for the deferred wait
			return err
		case <-readyC:
			readyC = nil
			// Handed over is not applied: a checkpoint flushes the sink.
			var at uint64
			if err := sub.Checkpoint(ctx, func(p eventplane.Position) error { at = p.StreamSeq; return nil }); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("replica: flush after catch-up: %w", err)
			}
			r.mu.Lock()
			r.st.Ready, r.st.Applied = true, max(r.st.Applied, at)
			r.st.Detail = strings.Join(append([]string{"following the stream"}, notes...), "; ")
			r.mu.Unlock()
			r.readyOnce.Do(func() { close(r.ready) })
			r.cfg.Logger.Info("replica caught up", "replica", r.cfg.ID, "restored_seq", pos.StreamSeq,
				"restored_events", restored, "applied_seq", at, "took", time.Since(began).Round(time.Millisecond))
		case <-tick.C:
			if err := r.poll(ctx, id, sub); err != nil {
				return err
			}
		}
	}
}

// restore applies the newest usable snapshot and returns the position to
// follow the stream from, and the stream as read after the snapshot (st
// when not read again).
func (r *Replica) restore(ctx context.Context, st jetstream.Stream, fresh bool) (eventplane.Position, int, []string, jetstream.Stream, error) {
	var notes []string
	if fresh {
		return eventplane.Position{}, 0, []string{"rebuilding from the stream after it restarted"}, st, nil
	}
	// NB: a cluster that is still electing leaders (a node just restarted)
	// times out for seconds; waiting for it beats replaying the whole
	// stream.
	// Each attempt ends by Latest's own deadline, so a read that gets no
	// reply is retried and logged here.
	s, err := eventplane.Retry(ctx, r.cfg.Logger, "snapshot store", r.snaps.Latest)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return eventplane.Position{}, 0, nil, st, ctx.Err()
		}
		r.cfg.Logger.Warn("no snapshot restored: the snapshot store failed; replaying the whole stream", "err", err)
		return eventplane.Position{}, 0, []string{"snapshot store failed: " + err.Error()}, st, nil
	case s == nil:
		return eventplane.Position{}, 0, []string{"no snapshot yet"}, st, nil
	}
	st, fit, err := r.catchUp(ctx, s, st)
	if err != nil {
		return eventplane.Position{}, 0, nil, st, err
	}
	if info := st.CachedInfo(); fit != snapshotFits {
		why := "snapshot of an earlier stream ignored"
		if fit == snapshotAhead {
			why = "snapshot ahead of the stream ignored"
		}
		r.cfg.Logger.Warn(why, "snapshot_seq", s.Position.StreamSeq,
			"stream_last_seq", info.State.LastSeq, "snapshot_stream", s.Stream, "stream", streamIdentity(info))
		return eventplane.Position{}, 0, []string{why}, st, nil
	}
	rejected := 0
	for i := range s.Events {
		if r.opts.Sink.Apply(&s.Events[i]) != nil {
			rejected++
		}
	}
	if err := r.opts.Flush(ctx); err != nil {
		return eventplane.Position{}, 0, nil, st, fmt.Errorf("replica: flush the restored snapshot: %w", err)
	}
	if rejected > 0 {
		notes = append(notes, fmt.Sprintf("%d snapshot events rejected", rejected))
	}
	r.cfg.Logger.Info("index restored from snapshot", "stream_seq", s.Position.StreamSeq, "events", len(s.Events),
		"rejected", rejected, "created", s.Created)
	return s.Position, len(s.Events), notes, st, nil
}

// lastSeq is the last sequence of the consumed subjects: the stream's,
// or with a Model filter the last message of that model (falling back to
// the stream's as of st's CachedInfo when the server cannot say).
func (r *Replica) lastSeq(ctx context.Context, st jetstream.Stream) uint64 {
	info := st.CachedInfo()
	if r.cfg.Model == "" {
		return info.State.LastSeq
	}
	m, err := st.GetLastMsgForSubject(ctx, r.conn.EventFilter(r.cfg.Model))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0
	}
	if err != nil {
		return info.State.LastSeq
	}
	return m.Sequence
}

func (r *Replica) observe(info *jetstream.StreamInfo, last uint64) {
	r.mu.Lock()
	r.st.StreamFirst, r.st.StreamLast = info.State.FirstSeq, last
	r.mu.Unlock()
}

// poll refreshes the lag and detects a restarted stream (recreated, or
// its sequence below what was applied for behindPolls polls in a row):
// errStreamReset then.
func (r *Replica) poll(ctx context.Context, id string, sub *eventplane.Subscriber) error {
	pctx, cancel := context.WithTimeout(ctx, max(r.cfg.StatusInterval, time.Second))
	defer cancel()
	st, err := r.conn.JS.Stream(pctx, r.conn.Stream().Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// The server lost it (restarted with a fresh store, or it was
		// deleted): recreate it, or publishers and this replica wait on
		// nothing forever. Its new identity resets this life below.
		r.cfg.Logger.Warn("KV event stream missing: recreating it")
		st, err = r.conn.EnsureStream(pctx)
	}
	if err != nil {
		return nil // unreachable or being recreated: the next poll sees
	}
	info := st.CachedInfo()
	applied := sub.Stats().StreamSeq
	if info.State.LastSeq < applied {
		r.behind++
	} else {
		r.behind = 0
	}
	if streamIdentity(info) != id || r.behind >= behindPolls {
		r.behind = 0
		r.mu.Lock()
		r.st.Ready = false
		r.st.Resets++
		r.st.Detail = "stream restarted: clearing the index and rebuilding"
		r.mu.Unlock()
		r.cfg.Logger.Warn("KV event stream restarted: clearing the index and rebuilding", "applied_seq", applied,
			"stream_last_seq", info.State.LastSeq, "stream_created", info.Created)
		if on := r.opts.SubscriberEvents.OnIngest; on != nil {
			on(0, ordering.FaultStreamReset, 1)
		}
		return errStreamReset
	}
	r.observe(info, r.lastSeq(pctx, st))
	return nil
}

// writeSnapshots runs while this replica holds the lease.
func (r *Replica) writeSnapshots(ctx context.Context) {
	t := time.NewTicker(r.cfg.SnapshotInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.snapshot(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("snapshot failed", "err", err)
		}
	}
}

// snapshot writes one snapshot when the replica is ready and the stream
// moved since its last one.
func (r *Replica) snapshot(ctx context.Context) error {
	r.mu.Lock()
	sub, id, ready, saved := r.sub, r.streamID, r.st.Ready, r.saved
	r.mu.Unlock()
	if sub == nil || !ready || sub.Stats().StreamSeq == saved {
		return nil
	}
	var s *snapshot.Snapshot
	// Not while events wait in the reorder buffer (a NATS failover
	// republishes messages behind later ones): the dump would miss them
	// and a replica restoring it would never see them. The next tick
	// tries again.
	settled, err := sub.CheckpointSettled(ctx, func(pos eventplane.Position) error {
		s = &snapshot.Snapshot{Position: pos, Events: r.opts.Dump(), Created: time.Now(), Stream: id}
		return nil
	})
	if err != nil {
		return err
	}
	if !settled {
		r.cfg.Logger.Debug("snapshot postponed: events wait in the reorder buffer")
		return nil
	}
	if s.Position.StreamSeq == 0 {
		return nil
	}
	if err := r.snaps.Save(ctx, s); err != nil {
		return err
	}
	r.mu.Lock()
	r.saved = s.Position.StreamSeq
	r.mu.Unlock()
	r.snapshots.Add(1)
	r.lastSnapshot.Store(time.Now().UnixNano())
	r.cfg.Logger.Debug("snapshot saved", "stream_seq", s.Position.StreamSeq, "events", len(s.Events))
	return nil
}

// flushSink gives the subscriber the index's flush, so its checkpoints
// cover applied events only.
type flushSink struct {
	eventplane.Sink
	flush func(ctx context.Context) error
}

func (f flushSink) Flush(ctx context.Context) error { return f.flush(ctx) }
