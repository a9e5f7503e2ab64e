package discovery

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/nats-io/nats.go/jetstream"
)

// Membership is told about joins and leaves (the router's side:
// AddWorker/RemoveWorker plus removal from the index and load tracker).
type Membership interface {
	// Join adds or updates a worker; an error refuses it.
	Join(w Worker) error
	// Leave removes a worker that went away.
	Leave(id uint64)
}

// RegistryConfig configures a Registry.
type RegistryConfig struct {
	// Bucket is the NATS KV bucket; default "kvrouter_workers".
	Bucket string
	// TTL: an entry not refreshed for this long is gone; default 15s.
	TTL time.Duration
	// Heartbeat is the refresh interval; default TTL/3.
	Heartbeat time.Duration
	// OnSynced, when set, is called each time Watch has delivered the
	// bucket's current entries (at start and after a restart of the
	// watch): from then on, a worker not joined is not registered.
	OnSynced func()
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Registry is worker registration in a NATS KV bucket.
type Registry struct {
	conn *eventplane.Conn
	cfg  RegistryConfig

	mu sync.Mutex
	kv jetstream.KeyValue

	duplicates atomic.Uint64
}

// NewRegistry returns a Registry on conn; it does no I/O.
func NewRegistry(conn *eventplane.Conn, cfg RegistryConfig) *Registry {
	if cfg.Bucket == "" {
		cfg.Bucket = "kvrouter_workers"
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 15 * time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = cfg.TTL / 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Registry{conn: conn, cfg: cfg}
}

func key(id uint64) string { return "w." + strconv.FormatUint(id, 10) }

func (r *Registry) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kv != nil {
		return r.kv, nil
	}
	kv, err := eventplane.Retry(ctx, r.cfg.Logger, "worker registry bucket", func(ctx context.Context) (jetstream.KeyValue, error) {
		replicas, err := r.conn.Replicas(ctx, "KV_"+r.cfg.Bucket)
		if err != nil {
			return nil, err
		}
		return r.conn.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: r.cfg.Bucket, TTL: r.cfg.TTL, History: 1, Replicas: replicas,
			Description: "kvrouter worker registry"})
	})
	if err != nil {
		return nil, fmt.Errorf("discovery: bucket %s: %w", r.cfg.Bucket, err)
	}
	r.kv = kv
	return kv, nil
}

// forget drops the cached bucket handle kv, so that the next use looks the
// bucket up (and creates it) again.
func (r *Registry) forget(kv jetstream.KeyValue) {
	r.mu.Lock()
	if r.kv == kv {
		r.kv = nil
	}
	r.mu.Unlock()
}

// bucketIdentity is the creation time of the bucket's stream; "" when it
// cannot be read (err says why; jetstream.ErrStreamNotFound: it is gone).
func (r *Registry) bucketIdentity(ctx context.Context) (string, error) {
	st, err := r.conn.JS.Stream(ctx, "KV_"+r.cfg.Bucket)
	if err != nil {
		return "", err
	}
	return st.CachedInfo().Created.UTC().Format(time.RFC3339Nano), nil
}

// Register writes w once, unconditionally (for tools and tests: an
// instance's lifecycle is Keepalive, which checks who holds the id).
func (r *Registry) Register(ctx context.Context, w Worker) error {
	if err := w.Validate(); err != nil {
		return err
	}
	kv, err := r.bucket(ctx)
	if err != nil {
		return err
	}
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, key(w.ID), b); err != nil {
		// The bucket may be gone (a server restarted with a fresh store):
		// the next Register creates it again.
		r.forget(kv)
		return fmt.Errorf("discovery: register worker %d: %w", w.ID, err)
	}
	return nil
}

// Deregister deletes w's entry (a clean leave).
func (r *Registry) Deregister(ctx context.Context, id uint64) error {
	kv, err := r.bucket(ctx)
	if err != nil {
		return err
	}
	if err := kv.Delete(ctx, key(id)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("discovery: deregister worker %d: %w", id, err)
	}
	return nil
}

// Keepalive registers w and refreshes it every Heartbeat until ctx is
// done, then deletes its registration, unless another instance wrote it
// since (compare-and-delete on the revision). Failed refreshes are logged
// and retried.
//
// The registration is this instance's (w.Epoch) alone: while another live
// instance holds the id, w is not written (ErrDuplicate, logged, counted
// in Duplicates) and Keepalive tries again every Heartbeat, so it takes
// the id over once the holder deregisters or its entry expires (the
// bucket's TTL). A refresh that finds the entry moved (another writer, a
// recreated bucket) claims it again the same way. The first write's
// error other than ErrDuplicate is returned.
func (r *Registry) Keepalive(ctx context.Context, w Worker) error {
	if err := w.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	var rev uint64 // of our entry while we hold it; 0 when we do not
	refused := false
	beat := func() error {
		kv, err := r.bucket(ctx)
		if err != nil {
			return err
		}
		if rev != 0 {
			n, err := kv.Update(ctx, key(w.ID), b, rev)
			if err == nil {
				rev = n
				return nil
			}
			if !lostRevision(err) {
				r.forget(kv)
				return fmt.Errorf("discovery: refresh worker %d: %w", w.ID, err)
			}
		}
		n, err := r.claim(ctx, kv, w, b, rev != 0)
		var dup *DuplicateError
		switch {
		case errors.As(err, &dup):
			rev = 0
			r.duplicates.Add(1)
			if !refused {
				r.cfg.Logger.Warn("worker id registered by another live instance; not registering until it leaves",
					"worker", w.ID, "epoch", w.Epoch, "holder_epoch", dup.Holder)
			}
			refused = true
			return err
		case err != nil:
			// rev stays: held, the next beat's Update fails and claims
			// again as the holder.
			r.forget(kv)
			return fmt.Errorf("discovery: register worker %d: %w", w.ID, err)
		}
		if refused {
			r.cfg.Logger.Info("worker id free again: registered", "worker", w.ID, "epoch", w.Epoch)
		}
		rev, refused = n, false
		return nil
	}
	if err := beat(); err != nil && !errors.Is(err, ErrDuplicate) {
		return err
	}
	t := time.NewTicker(r.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if rev == 0 {
				return nil // nothing of ours to delete
			}
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			kv, err := r.bucket(dctx)
			if err != nil {
				return err
			}
			err = kv.Delete(dctx, key(w.ID), jetstream.LastRevision(rev))
			if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) && !lostRevision(err) {
				return fmt.Errorf("discovery: deregister worker %d: %w", w.ID, err)
			}
			return nil
		case <-t.C:
			if err := beat(); err != nil && ctx.Err() == nil && !errors.Is(err, ErrDuplicate) {
				r.cfg.Logger.Warn("worker heartbeat failed", "worker", w.ID, "err", err)
			}
		}
	}
}

// Duplicates counts Keepalive's writes refused because another live
// instance held the id.
func (r *Registry) Duplicates() uint64 { return r.duplicates.Load() }

// Purge deletes the registrations of model's workers, and of workers that
// name no model (a router serves those too), and returns how many (a start
// from clean state: serve --reset-states). Live workers register again at
// their next heartbeat.
func (r *Registry) Purge(ctx context.Context, model string) (int, error) {
	kv, err := r.bucket(ctx)
	if err != nil {
		return 0, err
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("discovery: purge: %w", err)
	}
	n := 0
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue // gone meanwhile
		}
		var w Worker
		if json.Unmarshal(e.Value(), &w) == nil && w.Model != "" && w.Model != model {
			continue
		}
		if err := kv.Delete(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return n, fmt.Errorf("discovery: purge %s: %w", k, err)
		}
		n++
	}
	return n, nil
}

// List returns the registered workers.
func (r *Registry) List(ctx context.Context) ([]Worker, error) {
	kv, err := r.bucket(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovery: list: %w", err)
	}
	var ws []Worker
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue
		}
		// The entries are input: the same bounds and checks as Watch's.
		if w, err := DecodeRegistration(k, e.Value()); err == nil {
			ws = append(ws, w)
		}
	}
	return NumberWorkers(ws)
}

// Watch reports registrations to m until ctx is done: every current and
// new entry is a Join (re-registrations with changed fields too), a deleted
// entry or one not refreshed within TTL a Leave.
//
// A worker silent for TTL is looked up in the bucket before it is dropped,
// because silence may be the watch's, not the worker's: when the NATS
// server holding the watch's consumer dies, the watch can stop delivering
// without an error. An entry that is still fresh means exactly that, and
// the watch is restarted (it replays the current entries); an entry that
// cannot be read (no JetStream leader yet) keeps the worker until a later
// sweep can tell. Only a missing or stale entry is a Leave.
func (r *Registry) Watch(ctx context.Context, m Membership) error {
	// seen is the live holder of an id: its last put, as the local
	// clock saw it, its value and its instance.
	type seen struct {
		at  time.Time
		raw string
		in  instance
	}
	live := map[uint64]seen{}
	// refusedEpoch remembers the duplicates refused per id, so that each
	// is reported once, not at every heartbeat (at most maxRefusedEpochs
	// per id; forgotten when the id's holder changes).
	refusedEpoch := map[uint64]map[string]bool{}
	sweep := time.NewTicker(max(r.cfg.TTL/4, 10*time.Millisecond))
	defer sweep.Stop()
	// NB: a NATS server restarted with a fresh store (or a deleted
	// bucket) leaves the watch silent on a bucket that no longer exists;
	// the workers' next heartbeats recreate it. The bucket's identity is
	// checked every second and the watch restarted on the new bucket, so
	// membership recovers within a heartbeat, not a TTL.
	ident := time.NewTicker(min(time.Second, max(r.cfg.TTL/4, 10*time.Millisecond)))
	defer ident.Stop()
	for {
		kv, err := r.bucket(ctx)
		if err != nil {
			return err
		}
		id, _ := r.bucketIdentity(ctx)
		wch, err := kv.WatchAll(ctx)
		if err != nil {
			return fmt.Errorf("discovery: watch: %w", err)
		}
		restart, err := func() (bool, error) {
			defer func() { _ = wch.Stop() }()
			for {
				select {
				case <-ctx.Done():
					return false, nil
				case <-ident.C:
					now, err := r.bucketIdentity(ctx)
					switch {
					case errors.Is(err, jetstream.ErrStreamNotFound):
						r.cfg.Logger.Warn("worker registry bucket missing: recreating it and restarting the watch")
						r.forget(kv)
						return true, nil
					case err == nil && now != id:
						r.cfg.Logger.Warn("worker registry bucket recreated: restarting the watch")
						r.forget(kv)
						return true, nil
					}
				case now := <-sweep.C:
					stalled := false
					for id, s := range live {
						if now.Sub(s.at) <= r.cfg.TTL {
							continue
						}
						e, err := kv.Get(ctx, key(id))
						switch expiry(e, err, now, r.cfg.TTL, s.in.Epoch) {
						case expiryGone:
							delete(live, id)
							delete(refusedEpoch, id)
							r.cfg.Logger.Info("worker expired (no heartbeat)", "worker", id)
							m.Leave(id)
						case expiryWatchStalled:
							s.at = now
							live[id] = s
							stalled = true
						case expiryUnknown:
							r.cfg.Logger.Debug("worker silent, registry unreadable; kept", "worker", id, "err", err)
						}
					}
					if stalled {
						r.cfg.Logger.Warn("registry watch stalled; restarting it")
						return true, nil
					}
				case e, ok := <-wch.Updates():
					if !ok {
						return false, errors.New("discovery: watch closed")
					}
					if e == nil { // initial values delivered
						if r.cfg.OnSynced != nil {
							r.cfg.OnSynced()
						}
						continue
					}
					id, err := KeyID(e.Key())
					if err != nil {
						if e.Operation() == jetstream.KeyValuePut {
							refuse(m, 0, err)
						}
						continue
					}
					switch e.Operation() {
					case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
						delete(refusedEpoch, id)
						if _, ok := live[id]; ok {
							delete(live, id)
							m.Leave(id)
						}
					case jetstream.KeyValuePut:
						// NB: the entry's creation time is the server's clock; the
						// local clock only measures silence from here on.
						at := time.Now()
						if time.Since(e.Created()) > r.cfg.TTL {
							continue // stale
						}
						prev, had := live[id]
						if had && prev.raw == string(e.Value()) {
							prev.at = at
							live[id] = prev
							continue // heartbeat
						}
						w, err := DecodeRegistration(e.Key(), e.Value())
						in := instance{Epoch: w.Epoch, URL: w.URL}
						if err == nil && had && at.Sub(prev.at) <= r.cfg.TTL && !supersedes(prev.in, in) {
							// Another instance claims a live holder's id (a
							// writer without Keepalive's check): refused, the
							// holder kept; it wins once the holder is silent.
							err = &DuplicateError{ID: id, Epoch: w.Epoch, Holder: prev.in.Epoch}
							if !refusedEpoch[id][w.Epoch] {
								if refusedEpoch[id] == nil {
									refusedEpoch[id] = map[string]bool{}
								}
								if len(refusedEpoch[id]) < maxRefusedEpochs {
									refusedEpoch[id][w.Epoch] = true
								}
								r.cfg.Logger.Warn("worker id claimed by a second live instance; refused", "worker", id,
									"epoch", w.Epoch, "url", w.URL, "holder_epoch", prev.in.Epoch, "holder_url", prev.in.URL)
								refuse(m, id, err)
							}
							continue
						}
						live[id] = seen{at: at, raw: string(e.Value()), in: in}
						delete(refusedEpoch, id)
						if err != nil {
							r.cfg.Logger.Warn("bad registry entry", "key", e.Key(), "err", err)
							refuse(m, id, err)
							continue
						}
						if err := safeJoin(m, w); err != nil {
							r.cfg.Logger.Error("worker refused", "worker", id, "url", w.URL, "err", err)
						}
					}
				}
			}
		}()
		if !restart || ctx.Err() != nil {
			return err
		}
	}
}

// expiryVerdict is what a sweep concludes about a worker silent for TTL.
type expiryVerdict int

const (
	expiryGone         expiryVerdict = iota // entry deleted or stale: Leave
	expiryWatchStalled                      // entry fresh: the watch missed it
	expiryUnknown                           // bucket unreadable: ask again later
)

// expiry judges a silent worker (instance epoch) from a Get of its entry
// at now. A fresh entry of another instance means the silent one is gone
// (another took the id over), not that the watch stalled.
func expiry(e jetstream.KeyValueEntry, err error, now time.Time, ttl time.Duration, epoch string) expiryVerdict {
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return expiryGone
	case err != nil:
		return expiryUnknown
	case e.Operation() != jetstream.KeyValuePut || now.Sub(e.Created()) > ttl:
		return expiryGone
	}
	if other := instanceOf(e.Value()).Epoch; epoch != "" && other != "" && other != epoch {
		return expiryGone
	}
	return expiryWatchStalled
}

// maxRefusedEpochs bounds the duplicate instances Watch remembers per id
// (beyond, each further one is reported at every put).
const maxRefusedEpochs = 16

// Fleet merges static and registered workers, refuses block-size
// mismatches and forwards to a Membership. It is itself a Membership, so
// Registry.Watch(ctx, fleet) works. Safe for concurrent use.
type Fleet struct {
	blockSize int
	next      Membership
	log       *slog.Logger

	// OnRefused, when set (before use), is called with the reason of
	// every refusal (kvrouter_workers_refused_total).
	OnRefused func(reason string)
	// OnRestart, when set (before use), is called with the previous
	// registration of a worker that came back with a new epoch, after it
	// left: the event plane forgets it (its new life numbers events anew).
	OnRestart func(prev Worker)

	mu      sync.Mutex
	workers map[uint64]Worker
	// dups are the duplicate instances refused per id, while the id's
	// holder is a member (for /debug).
	dups     map[uint64]Duplicate
	refused  atomic.Uint64
	restarts atomic.Uint64
}

// NewFleet returns a Fleet for a router of the given block size.
func NewFleet(blockSize int, next Membership, log *slog.Logger) *Fleet {
	if log == nil {
		log = slog.Default()
	}
	return &Fleet{blockSize: blockSize, next: next, log: log, workers: map[uint64]Worker{}, dups: map[uint64]Duplicate{}}
}

// Join checks and forwards a worker. A known worker announcing a new
// epoch restarted: it leaves first (its index entries and load are
// dropped), then joins again.
func (f *Fleet) Join(w Worker) error {
	if err := w.Validate(); err != nil {
		f.Refuse(w.ID, ReasonInvalid, err)
		return err
	}
	if err := CheckBlockSize(f.blockSize, w); err != nil {
		f.Refuse(w.ID, ReasonBlockSize, err)
		return err
	}
	f.mu.Lock()
	prev, known := f.workers[w.ID]
	f.mu.Unlock()
	if known && prev.Epoch != w.Epoch {
		f.log.Info("worker restarted (new epoch); dropping its cache state", "worker", w.ID, "epoch", w.Epoch, "previous_epoch", prev.Epoch)
		f.restarts.Add(1)
		f.next.Leave(w.ID) // index entries and load
		if f.OnRestart != nil {
			f.OnRestart(prev)
		}
	}
	if err := safeJoin(f.next, w); err != nil {
		if known {
			f.mu.Lock()
			delete(f.workers, w.ID)
			f.mu.Unlock()
			f.next.Leave(w.ID)
		}
		f.Refuse(w.ID, Reason(err), err)
		return err
	}
	f.mu.Lock()
	f.workers[w.ID] = w
	f.mu.Unlock()
	return nil
}

// Refuse counts and logs a refused registration and reports it to
// OnRefused (Refuser).
func (f *Fleet) Refuse(id uint64, reason string, err error) {
	f.refused.Add(1)
	var dup *DuplicateError
	if errors.As(err, &dup) {
		f.mu.Lock()
		if _, ok := f.workers[id]; ok {
			d := f.dups[id]
			d.ID, d.Epoch, d.Holder, d.Refused = id, dup.Epoch, dup.Holder, d.Refused+1
			f.dups[id] = d
		}
		f.mu.Unlock()
	}
	f.log.Error("worker refused", "worker", id, "reason", reason, "err", err)
	if f.OnRefused != nil {
		f.OnRefused(reason)
	}
}

// refuse tells m about a refused registration when it listens.
func refuse(m Membership, id uint64, err error) {
	if r, ok := m.(Refuser); ok {
		r.Refuse(id, Reason(err), err)
	}
}

// safeJoin joins w; a panic below (a bug reached by input) becomes an
// error wrapping errPanic instead of taking the process down.
func safeJoin(m Membership, w Worker) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: worker %d: %v", errPanic, w.ID, p)
		}
	}()
	return m.Join(w)
}

// Leave forwards a leave of a known worker.
func (f *Fleet) Leave(id uint64) {
	f.mu.Lock()
	_, ok := f.workers[id]
	delete(f.workers, id)
	delete(f.dups, id)
	f.mu.Unlock()
	if ok {
		f.next.Leave(id)
	}
}

// AddStatic joins a static list; it returns every refusal joined.
func (f *Fleet) AddStatic(ws []Worker) error {
	var errs []error
	for _, w := range ws {
		errs = append(errs, f.Join(w))
	}
	return errors.Join(errs...)
}

// Workers returns the current members sorted by id.
func (f *Fleet) Workers() []Worker {
	f.mu.Lock()
	ws := make([]Worker, 0, len(f.workers))
	for _, w := range f.workers {
		ws = append(ws, w)
	}
	f.mu.Unlock()
	out, _ := NumberWorkers(ws)
	return out
}

// Duplicate is a second live instance refused for a member's id.
type Duplicate struct {
	ID uint64 `json:"id"`
	// Epoch is the last refused instance's, Holder the member's.
	Epoch   string `json:"epoch"`
	Holder  string `json:"holder_epoch"`
	Refused uint64 `json:"refused"`
}

// Duplicates returns the duplicate instances refused for current members,
// sorted by id.
func (f *Fleet) Duplicates() []Duplicate {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.SortedFunc(maps.Values(f.dups), func(a, b Duplicate) int { return cmp.Compare(a.ID, b.ID) })
}

// Refused counts workers refused (invalid, undecodable, block-size
// mismatch or the Membership's error); export it as a metric.
func (f *Fleet) Refused() uint64 { return f.refused.Load() }

// Restarts counts known workers that registered with a new epoch.
func (f *Fleet) Restarts() uint64 { return f.restarts.Load() }
