package benchindex

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Lookup is one request of the trace, as the router sees it: the local
// hashes of its prompt's full blocks, asked of the index when the request
// arrives at its worker.
type Lookup struct {
	At      time.Duration // arrival, on the trace clock (offset from trace start)
	Worker  int           // worker index in [0, W) the partition gave it
	Request int           // index of the request in the (limited) trace
	Locals  []uint64      // local block hashes of the prompt (DESIGN.md §1)
}

// TimedEvent is one KV event of a worker's engine, stamped with the
// simulated time at which the engine emitted it.
type TimedEvent struct {
	At     time.Duration // emission, on the same clock as Lookup.At
	Worker int           // worker index in [0, W); Event.WorkerID == uint64(Worker)
	Event  kvevents.Event
}

// Stream is the benchmark's input: every lookup and every event of every
// worker. It is generated once (Generate) and replayed many times.
type Stream struct {
	Workers int
	Lookups []Lookup
	Events  []TimedEvent
}

// OpKind says what a timeline entry does.
type OpKind uint8

const (
	OpLookup OpKind = iota // a FindMatches, timed, inline on the reader
	OpEvent                // an Apply, handed to the worker's sticky writer
)

// Entry is one step of the merged timeline.
type Entry struct {
	At     time.Duration // on the source clock
	Worker int32
	Kind   OpKind
	Index  int32 // into Stream.Lookups or Stream.Events
}

// Timeline is a Stream merged into one time-ordered sequence, with the
// totals the report needs.
type Timeline struct {
	Stream  *Stream
	Entries []Entry
	// Span is the source-clock time of the last entry; a replay window W
	// maps source time t to wall offset t*W/Span.
	Span time.Duration

	Lookups, Events      int
	Stored, Removed      int   // events by kind (Cleared are counted in Events only)
	QueryBlocks          int64 // sum of len(Locals) over lookups
	StoredBlocks         int64 // blocks carried by Stored events
	RemovedBlocks        int64 // hashes carried by Removed events
	MaxWorkerEventsShare float64
}

// Ops is lookups + events: the numerator of ops/s.
func (t *Timeline) Ops() int64 { return int64(t.Lookups + t.Events) }

// BlockOps is the numerator of block ops/s (DESIGN.md §8): requested
// (query) blocks + blocks in Stored events + hashes in Removed events; a
// Cleared event is one op with zero blocks.
func (t *Timeline) BlockOps() int64 { return t.QueryBlocks + t.StoredBlocks + t.RemovedBlocks }

// Merge orders every lookup and event of s on one timeline. The order is
// total and deterministic: by time, then worker, then lookups before events
// (a request is routed before its engine caches anything for it), then by
// request index or position in s.Events. A worker's events thus keep their
// s.Events order whenever their times never decrease (Stream.Validate).
func Merge(s *Stream) *Timeline {
	t := &Timeline{Stream: s, Lookups: len(s.Lookups), Events: len(s.Events)}
	t.Entries = make([]Entry, 0, len(s.Lookups)+len(s.Events))
	for i := range s.Lookups {
		l := &s.Lookups[i]
		t.QueryBlocks += int64(len(l.Locals))
		t.Entries = append(t.Entries, Entry{At: l.At, Worker: int32(l.Worker), Kind: OpLookup, Index: int32(i)})
	}
	perWorker := make([]int, max(s.Workers, 1))
	for i := range s.Events {
		e := &s.Events[i]
		switch e.Event.Kind {
		case kvevents.KindStored:
			t.Stored++
			t.StoredBlocks += int64(len(e.Event.Blocks))
		case kvevents.KindRemoved:
			t.Removed++
			t.RemovedBlocks += int64(len(e.Event.Hashes))
		}
		if e.Worker >= 0 && e.Worker < len(perWorker) {
			perWorker[e.Worker]++
		}
		t.Entries = append(t.Entries, Entry{At: e.At, Worker: int32(e.Worker), Kind: OpEvent, Index: int32(i)})
	}
	slices.SortFunc(t.Entries, compareEntries)
	if n := len(t.Entries); n > 0 {
		t.Span = t.Entries[n-1].At
	}
	if len(s.Events) > 0 {
		t.MaxWorkerEventsShare = float64(slices.Max(perWorker)) / float64(len(s.Events))
	}
	return t
}

func compareEntries(a, b Entry) int {
	if c := cmp.Compare(a.At, b.At); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Worker, b.Worker); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	return cmp.Compare(a.Index, b.Index)
}

// Validate reports every inconsistency of s that would make a replay
// meaningless: workers out of range, an event whose WorkerID disagrees with
// its worker index, or a worker whose event times or event ids go backwards.
func (s *Stream) Validate() error {
	var errs []error
	if s.Workers <= 0 {
		errs = append(errs, fmt.Errorf("benchindex: stream has %d workers", s.Workers))
	}
	for i := range s.Lookups {
		if w := s.Lookups[i].Worker; w < 0 || w >= s.Workers {
			errs = append(errs, fmt.Errorf("benchindex: lookup %d: worker %d out of range [0,%d)", i, w, s.Workers))
			break
		}
	}
	type last struct {
		at  time.Duration
		id  uint64
		set bool
	}
	seen := make([]last, max(s.Workers, 0))
	for i := range s.Events {
		e := &s.Events[i]
		if e.Worker < 0 || e.Worker >= s.Workers {
			errs = append(errs, fmt.Errorf("benchindex: event %d: worker %d out of range [0,%d)", i, e.Worker, s.Workers))
			break
		}
		if e.Event.WorkerID != uint64(e.Worker) {
			errs = append(errs, fmt.Errorf("benchindex: event %d: worker_id %d on worker %d", i, e.Event.WorkerID, e.Worker))
			break
		}
		l := &seen[e.Worker]
		if l.set && (e.At < l.at || e.Event.EventID <= l.id) {
			errs = append(errs, fmt.Errorf("benchindex: event %d of worker %d goes backwards (at %v id %d after at %v id %d)",
				i, e.Worker, e.At, e.Event.EventID, l.at, l.id))
			break
		}
		*l = last{at: e.At, id: e.Event.EventID, set: true}
	}
	return errors.Join(errs...)
}
