package affinity

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Table maps session ids to workers. Build with New.
type Table struct {
	ttl time.Duration
	m   map[string]entry
}

type entry struct {
	w    kvevents.Worker
	last time.Time
}

// New returns an empty table whose bindings expire after ttl without use
// (ttl <= 0: never).
func New(ttl time.Duration) *Table {
	return &Table{ttl: ttl, m: make(map[string]entry)}
}

func (t *Table) expired(e entry, now time.Time) bool {
	return t.ttl > 0 && now.Sub(e.last) > t.ttl
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
		delete(t.m, session)
		return kvevents.Worker{}, false
	}
	return e.w, true
}

// Bind binds (or rebinds) session to w and refreshes its idle timer.
func (t *Table) Bind(session string, w kvevents.Worker, now time.Time) {
	t.m[session] = entry{w: w, last: now}
}

// Drop removes session's binding (e.g. dispatch to its worker failed).
func (t *Table) Drop(session string) { delete(t.m, session) }

// DropWorker removes every binding to any rank of worker id and returns
// how many it removed.
func (t *Table) DropWorker(id uint64) int {
	n := 0
	for s, e := range t.m {
		if e.w.ID == id {
			delete(t.m, s)
			n++
		}
	}
	return n
}

// Sweep deletes every binding idle for longer than the TTL at now and
// returns how many it deleted.
func (t *Table) Sweep(now time.Time) int {
	n := 0
	for s, e := range t.m {
		if t.expired(e, now) {
			delete(t.m, s)
			n++
		}
	}
	return n
}

// Len is the number of bindings (expired ones included until swept).
func (t *Table) Len() int { return len(t.m) }

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
