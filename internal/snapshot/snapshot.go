package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/nats-io/nats.go/jetstream"
)

// Dumper is the index (indexer.Index has it).
type Dumper interface {
	Dump() []kvevents.Event
}

// Checkpointer is the stream subscriber (eventplane.Subscriber has it).
type Checkpointer interface {
	Checkpoint(ctx context.Context, fn func(eventplane.Position) error) error
	Stats() eventplane.SubscriberStats
}

// Config configures a Manager.
type Config struct {
	// Bucket is the object store; default "kvrouter_snapshots".
	Bucket string
	// Every is the number of applied events that calls for a snapshot;
	// default 100000.
	Every uint64
	// Interval is the least time between snapshots (and the time after
	// which any new event calls for one); default 30s.
	Interval time.Duration
	// Keep is how many snapshots to keep; default 3.
	Keep int
	// MaxBytes is the largest snapshot object read back; a larger one is
	// skipped as unreadable before anything is allocated for it. Default
	// DefaultMaxBytes; 0 means the default.
	MaxBytes int64
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Snapshot is an index dump and the stream position it covers.
type Snapshot struct {
	Position eventplane.Position
	Events   []kvevents.Event
	Created  time.Time
	// Stream identifies the stream Position refers to (its creation
	// time): a snapshot of a stream since deleted and recreated, whose
	// sequences restarted, must not be restored. "" in older snapshots.
	Stream string
}

type header struct {
	StreamSeq uint64      `json:"stream_seq"`
	LastIDs   [][3]uint64 `json:"last_ids"` // [worker, rank, last event id], sorted
	Events    int         `json:"events"`
	Created   time.Time   `json:"created"`
	Stream    string      `json:"stream,omitempty"`
}

// DefaultMaxBytes is Config.MaxBytes's default: 1 GiB, some 20 times a
// 1M-block index's snapshot (tens of MB).
const DefaultMaxBytes = 1 << 30

// MinEventBytes is the least an event takes in a snapshot's body (a
// msgpack map holding at least the worker id and event kind keys): a
// header claiming more events than the body has room for is refused
// before any allocation.
const MinEventBytes = 16

// ErrTooLarge is wrapped by the errors of an object or header beyond the
// bounds (Config.MaxBytes, MinEventBytes per event).
var ErrTooLarge = errors.New("snapshot: beyond bounds")

// Stats counts what a Manager did.
type Stats struct {
	// Skipped is how many snapshot objects reads found unusable (corrupt,
	// undecodable, too large) and passed over for an older one or a
	// stream replay.
	Skipped uint64
}

// Manager writes and reads snapshots.
type Manager struct {
	conn *eventplane.Conn
	cfg  Config

	mu  sync.Mutex
	obs jetstream.ObjectStore

	skipped atomic.Uint64
}

// NewManager returns a Manager on conn; it does no I/O.
func NewManager(conn *eventplane.Conn, cfg Config) *Manager {
	if cfg.Bucket == "" {
		cfg.Bucket = "kvrouter_snapshots"
	}
	if cfg.Every == 0 {
		cfg.Every = 100000
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Keep <= 0 {
		cfg.Keep = 3
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Manager{conn: conn, cfg: cfg}
}

// Stats returns the counters.
func (m *Manager) Stats() Stats { return Stats{Skipped: m.skipped.Load()} }

func (m *Manager) store(ctx context.Context) (jetstream.ObjectStore, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.obs != nil {
		return m.obs, nil
	}
	replicas, err := m.conn.Replicas(ctx, "OBJ_"+m.cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("snapshot: object store %s: %w", m.cfg.Bucket, err)
	}
	obs, err := m.conn.JS.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: m.cfg.Bucket, Description: "kvrouter index snapshots", Replicas: replicas})
	if err != nil {
		return nil, fmt.Errorf("snapshot: object store %s: %w", m.cfg.Bucket, err)
	}
	m.obs = obs
	return obs, nil
}

// forget drops the cached handle obs after an operation on it failed: the
// bucket may be gone (NATS lost its state), and only store creates it
// again.
func (m *Manager) forget(obs jetstream.ObjectStore) {
	m.mu.Lock()
	if m.obs == obs {
		m.obs = nil
	}
	m.mu.Unlock()
}

func name(seq uint64) string { return fmt.Sprintf("index-%020d", seq) }

// Encode serializes a snapshot.
func Encode(s *Snapshot) ([]byte, error) {
	h := header{StreamSeq: s.Position.StreamSeq, Events: len(s.Events), Created: s.Created.UTC(), Stream: s.Stream}
	for w, id := range s.Position.LastIDs {
		h.LastIDs = append(h.LastIDs, [3]uint64{w.ID, uint64(w.Rank), id})
	}
	sort.Slice(h.LastIDs, func(i, j int) bool {
		a, b := h.LastIDs[i], h.LastIDs[j]
		return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1])
	})
	buf, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	buf = append(buf, '\n')
	if len(s.Events) > 0 {
		buf, err = eventplane.EncodeEnvelope(buf, eventplane.FormatMsgpack, s.Events)
	}
	return buf, err
}

// Decode parses a snapshot written by Encode. It never panics and
// allocates in proportion to len(b), whatever the bytes: the header's
// event count must fit in the body at MinEventBytes each (ErrTooLarge).
func Decode(b []byte) (*Snapshot, error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, errors.New("snapshot: no header")
	}
	var h header
	if err := json.Unmarshal(b[:i], &h); err != nil {
		return nil, fmt.Errorf("snapshot: header: %w", err)
	}
	if body := len(b) - i - 1; h.Events < 0 || h.Events > body/MinEventBytes {
		return nil, fmt.Errorf("%w: header says %d events, the body's %d bytes hold at most %d", ErrTooLarge, h.Events, body, body/MinEventBytes)
	}
	s := &Snapshot{Position: eventplane.Position{StreamSeq: h.StreamSeq, LastIDs: map[kvevents.Worker]uint64{}}, Created: h.Created, Stream: h.Stream}
	for _, l := range h.LastIDs {
		s.Position.LastIDs[kvevents.Worker{ID: l[0], Rank: uint32(l[1])}] = l[2]
	}
	if h.Events > 0 {
		evs, err := eventplane.DecodeEnvelope(make([]kvevents.Event, 0, h.Events), b[i+1:])
		if err != nil {
			return nil, fmt.Errorf("snapshot: events: %w", err)
		}
		if len(evs) != h.Events {
			return nil, fmt.Errorf("snapshot: %d events, header says %d", len(evs), h.Events)
		}
		s.Events = evs
	}
	return s, nil
}

// Save writes s and prunes old snapshots beyond Keep.
func (m *Manager) Save(ctx context.Context, s *Snapshot) error {
	obs, err := m.store(ctx)
	if err != nil {
		return err
	}
	b, err := Encode(s)
	if err != nil {
		return err
	}
	if _, err := obs.PutBytes(ctx, name(s.Position.StreamSeq), b); err != nil {
		m.forget(obs)
		return fmt.Errorf("snapshot: put: %w", err)
	}
	names, err := m.names(ctx)
	if err != nil {
		return err
	}
	for len(names) > m.cfg.Keep {
		_ = obs.Delete(ctx, names[0])
		names = names[1:]
	}
	return nil
}

// listTimeout bounds one listing of the snapshot bucket (Save prunes
// after one), readTimeout one Latest.
const (
	listTimeout = 10 * time.Second
	readTimeout = 10 * time.Second
)

// names lists snapshot objects, oldest first.
func (m *Manager) names(ctx context.Context) ([]string, error) {
	obs, err := m.store(ctx)
	if err != nil {
		return nil, err
	}
	// NB: a listing can wait for a reply that never comes (seen with the
	// bucket written meanwhile, in nats.go's List): bound it, so callers
	// see an error to retry instead of hanging.
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	infos, err := obs.List(lctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		m.forget(obs)
		return nil, fmt.Errorf("snapshot: list: %w", err)
	}
	var ns []string
	for _, in := range infos {
		if strings.HasPrefix(in.Name, "index-") && !in.Deleted {
			ns = append(ns, in.Name)
		}
	}
	sort.Strings(ns)
	return ns, nil
}

// Latest returns the newest readable snapshot, or nil when there is none.
// One call lasts at most readTimeout (listing and download; a large
// snapshot is tens of MB, well under a second on a LAN): a store call
// that gets no reply returns context.DeadlineExceeded for the caller to
// retry.
//
// A snapshot object that reads back corrupt (a digest mismatch, seen
// right after a NATS node of the bucket was killed), fails to decode or
// was deleted since the listing is skipped for the next older one, with
// a warning: an older snapshot and a longer replay of the stream after it
// beat replaying the whole stream. Only when none is readable does the
// newest one's error return.
func (m *Manager) Latest(ctx context.Context) (*Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	ns, err := m.names(ctx)
	if err != nil || len(ns) == 0 {
		return nil, err
	}
	var newest error
	for i := len(ns) - 1; i >= 0; i-- {
		s, err := m.get(ctx, ns[i])
		if err == nil {
			if newest != nil {
				m.cfg.Logger.Warn("newer snapshots unreadable; using an older one", "snapshot", ns[i], "err", newest)
			}
			return s, nil
		}
		if !errors.Is(err, errUnreadable) || ctx.Err() != nil {
			return nil, err
		}
		m.skipped.Add(1)
		m.cfg.Logger.Warn("snapshot unreadable; skipped", "snapshot", ns[i], "err", err)
		if newest == nil {
			newest = err
		}
	}
	return nil, newest
}

// errUnreadable marks a snapshot object that cannot be used, as opposed
// to a store that did not answer.
var errUnreadable = errors.New("snapshot unreadable")

// get reads and decodes the snapshot object n.
func (m *Manager) get(ctx context.Context, n string) (*Snapshot, error) {
	obs, err := m.store(ctx)
	if err != nil {
		return nil, err
	}
	r, err := obs.Get(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("snapshot: get %s: %w", n, unreadable(err))
	}
	defer r.Close()
	// Read into a buffer of the object's size: growing one by doubling
	// copied and cleared a large snapshot several times (a third of a
	// 1M-block restore's snapshot time in BenchmarkColdStart's profile).
	// The size is the object's metadata, written by whoever wrote the
	// object: checked against MaxBytes first, and the read itself is
	// bounded too.
	size := uint64(0)
	if info, err := r.Info(); err == nil {
		size = info.Size
	}
	if size > uint64(m.cfg.MaxBytes) {
		return nil, fmt.Errorf("snapshot: %s: %w: %w: %d bytes, at most %d", n, errUnreadable, ErrTooLarge, size, m.cfg.MaxBytes)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(r, m.cfg.MaxBytes+1)); err != nil {
		return nil, fmt.Errorf("snapshot: get %s: %w", n, unreadable(err))
	}
	if int64(buf.Len()) > m.cfg.MaxBytes {
		return nil, fmt.Errorf("snapshot: %s: %w: %w: more than %d bytes", n, errUnreadable, ErrTooLarge, m.cfg.MaxBytes)
	}
	s, err := Decode(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("snapshot: %s: %w: %w", n, errUnreadable, err)
	}
	return s, nil
}

// unreadable tags the errors that condemn one object (not the store).
func unreadable(err error) error {
	if errors.Is(err, jetstream.ErrDigestMismatch) || errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("%w: %w", errUnreadable, err)
	}
	return err
}

// Restore applies the newest snapshot to sink (an empty index) and returns
// the position to subscribe from (zero when there is no snapshot).
func (m *Manager) Restore(ctx context.Context, sink eventplane.Sink) (eventplane.Position, error) {
	s, err := m.Latest(ctx)
	if err != nil || s == nil {
		return eventplane.Position{}, err
	}
	var errs int
	for i := range s.Events {
		if sink.Apply(&s.Events[i]) != nil {
			errs++
		}
	}
	if f, ok := sink.(eventplane.Flusher); ok {
		if err := f.Flush(ctx); err != nil {
			return eventplane.Position{}, err
		}
	}
	m.cfg.Logger.Info("index restored from snapshot", "stream_seq", s.Position.StreamSeq,
		"events", len(s.Events), "rejected", errs, "created", s.Created)
	return s.Position, nil
}

// Take checkpoints cp and saves the index dump at that position.
func (m *Manager) Take(ctx context.Context, cp Checkpointer, idx Dumper) (*Snapshot, error) {
	var s *Snapshot
	err := cp.Checkpoint(ctx, func(pos eventplane.Position) error {
		s = &Snapshot{Position: pos, Events: idx.Dump(), Created: time.Now()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, m.Save(ctx, s)
}

// Run takes snapshots per Config until ctx is done.
func (m *Manager) Run(ctx context.Context, cp Checkpointer, idx Dumper) error {
	tick := time.NewTicker(min(m.cfg.Interval, time.Second))
	defer tick.Stop()
	last := cp.Stats().Events
	lastAt := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			n := cp.Stats().Events
			if n == last || now.Sub(lastAt) < m.cfg.Interval && n-last < m.cfg.Every {
				continue
			}
			s, err := m.Take(ctx, cp, idx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				m.cfg.Logger.Warn("snapshot failed", "err", err)
				continue
			}
			m.cfg.Logger.Debug("snapshot saved", "stream_seq", s.Position.StreamSeq, "events", len(s.Events))
			last, lastAt = n, now
		}
	}
}

// Purge deletes every snapshot in the bucket and returns how many there
// were (a start from clean state: serve --reset-states).
func (m *Manager) Purge(ctx context.Context) (int, error) {
	names, err := m.names(ctx)
	if err != nil {
		return 0, err
	}
	obs, err := m.store(ctx)
	if err != nil {
		return 0, err
	}
	for _, n := range names {
		if err := obs.Delete(ctx, n); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return 0, fmt.Errorf("snapshot: purge %s: %w", n, err)
		}
	}
	return len(names), nil
}
