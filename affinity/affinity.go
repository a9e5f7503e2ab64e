package affinity

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Config configures a Table.
type Config struct {
	// TTL is the idle time after which a binding expires; <= 0 means
	// never.
	TTL time.Duration
	// MaxSessions bounds the bindings held; <= 0 means no bound.
	MaxSessions int
	// MaxBytes bounds the bytes the bindings hold, counted as the
	// session id's length plus EntryOverhead each; <= 0 means no bound.
	MaxBytes int64
}

// EntryOverhead is what one binding costs beside its session id's bytes
// (the map slot and the entry with its list links), an estimate from the
// types' sizes rounded up to the allocator's size class.
const EntryOverhead = 112

// Table maps session ids to workers. Build with New.
type Table struct {
	cfg Config
	m   map[string]*entry
	// head is the most recently bound entry, tail the least: eviction
	// takes from the tail.
	head, tail *entry
	bytes      int64
	evicted    uint64
}

type entry struct {
	session    string
	w          kvevents.Worker
	last       time.Time
	prev, next *entry // toward head, toward tail
}

// New returns an empty table.
func New(cfg Config) *Table {
	return &Table{cfg: cfg, m: make(map[string]*entry)}
}

// Size returns what one binding of session costs against Config.MaxBytes.
func Size(session string) int64 { return int64(len(session)) + EntryOverhead }

func (t *Table) expired(e *entry, now time.Time) bool {
	return t.cfg.TTL > 0 && now.Sub(e.last) > t.cfg.TTL
}

func (t *Table) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		t.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		t.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (t *Table) pushFront(e *entry) {
	e.next = t.head
	if t.head != nil {
		t.head.prev = e
	}
	t.head = e
	if t.tail == nil {
		t.tail = e
	}
}

func (t *Table) remove(e *entry) {
	t.unlink(e)
	delete(t.m, e.session)
	t.bytes -= Size(e.session)
}

// Get returns the worker bound to session at now. An expired binding is
// deleted and reported absent. Get does not refresh the binding (Bind does,
// once the router has actually used it).
func (t *Table) Get(session string, now time.Time) (kvevents.Worker, bool) {
	e, ok := t.m[session]
	if !ok {
		return kvevents.Worker{}, false
	}
	if t.expired(e, now) {
		t.remove(e)
		return kvevents.Worker{}, false
	}
	return e.w, true
}

// Bind binds (or rebinds) session to w and refreshes its idle timer. A
// new binding beyond Config's bounds evicts the least recently bound ones
// first (Evicted counts them); one larger than MaxBytes on its own is not
// bound, and Bind reports false.
func (t *Table) Bind(session string, w kvevents.Worker, now time.Time) bool {
	if e, ok := t.m[session]; ok {
		e.w, e.last = w, now
		t.unlink(e)
		t.pushFront(e)
		return true
	}
	size := Size(session)
	if t.cfg.MaxBytes > 0 && size > t.cfg.MaxBytes {
		return false
	}
	for t.tail != nil && (t.cfg.MaxSessions > 0 && len(t.m) >= t.cfg.MaxSessions ||
		t.cfg.MaxBytes > 0 && t.bytes+size > t.cfg.MaxBytes) {
		t.remove(t.tail)
		t.evicted++
	}
	e := &entry{session: session, w: w, last: now}
	t.m[session] = e
	t.pushFront(e)
	t.bytes += size
	return true
}

// Drop removes session's binding (e.g. dispatch to its worker failed).
func (t *Table) Drop(session string) {
	if e, ok := t.m[session]; ok {
		t.remove(e)
	}
}

// DropWorker removes every binding to any rank of worker id and returns
// how many it removed.
func (t *Table) DropWorker(id uint64) int {
	n := 0
	for _, e := range t.m {
		if e.w.ID == id {
			t.remove(e)
			n++
		}
	}
	return n
}

// Sweep deletes every binding idle for longer than the TTL at now and
// returns how many it deleted.
func (t *Table) Sweep(now time.Time) int {
	n := 0
	for _, e := range t.m {
		if t.expired(e, now) {
			t.remove(e)
			n++
		}
	}
	return n
}

// Len is the number of bindings (expired ones included until swept).
func (t *Table) Len() int { return len(t.m) }

// Bytes is what the bindings cost against Config.MaxBytes.
func (t *Table) Bytes() int64 { return t.bytes }

// Evicted counts bindings evicted to make room for new ones.
func (t *Table) Evicted() uint64 { return t.evicted }

// String lists the bindings sorted by session.
func (t *Table) String() string {
	if len(t.m) == 0 {
		return "sessions: none\n"
	}
	ss := make([]string, 0, len(t.m))
	for s := range t.m {
		ss = append(ss, s)
	}
	slices.Sort(ss)
	var b strings.Builder
	for _, s := range ss {
		e := t.m[s]
		fmt.Fprintf(&b, "session %s -> w%s last=%s\n", s, e.w, e.last.UTC().Format("15:04:05.000"))
	}
	return b.String()
}
