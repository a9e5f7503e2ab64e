package indexer

import (
	"errors"
	"fmt"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Index is a prefix index over KV events: which worker+rank holds which
// prefix of blocks. Implementations are safe for concurrent use: any number
// of readers may call FindMatches while writers call Apply, provided that
// the events of one worker+rank are applied by one goroutine at a time and in
// event_id order (the Concurrent wrapper guarantees both).
type Index interface {
	// Apply applies one event. A rejected event (unknown parent, self
	// parent, bad kind) changes nothing and returns an error wrapping one of
	// the sentinels below. Removing an unknown hash is not an error: it is
	// counted in Stats and skipped.
	Apply(ev *kvevents.Event) error
	// FindMatches returns, for every worker+rank holding at least the first
	// query block, the number of leading query blocks it holds with the same
	// prefix. The result is sorted by worker (ID, then rank).
	FindMatches(locals []uint64) Overlaps
	// RemoveWorker drops every rank of a worker.
	RemoveWorker(id uint64)
	// Dump returns Stored events that rebuild an identical index when
	// applied, in order, to an empty one (parents before children).
	Dump() []kvevents.Event
	// Stats returns a snapshot of the index's size and counters.
	Stats() Stats
}

// Overlap is one worker+rank's match depth in blocks.
type Overlap struct {
	Worker kvevents.Worker
	Blocks int
}

// Overlaps is a FindMatches result, sorted by worker; workers with zero
// overlap are absent.
type Overlaps []Overlap

// Get returns the overlap of w, 0 when absent.
func (o Overlaps) Get(w kvevents.Worker) int {
	for _, x := range o {
		if x.Worker == w {
			return x.Blocks
		}
	}
	return 0
}

// Stats is a snapshot of an index.
type Stats struct {
	Blocks        int    `json:"blocks"`         // (worker+rank, block) pairs held
	Nodes         int    `json:"nodes"`          // distinct blocks (tree nodes or positional entries)
	Workers       int    `json:"workers"`        // worker+ranks holding at least one block
	Bytes         int64  `json:"bytes"`          // approximate bytes in use
	Applied       uint64 `json:"applied"`        // events applied
	Rejected      uint64 `json:"rejected"`       // events refused with an error
	UnknownRemove uint64 `json:"unknown_remove"` // removes of hashes the worker did not hold
	// Queued is the number of events enqueued but not yet applied
	// (Concurrent only; 0 elsewhere).
	Queued int `json:"queued"`
	// SafeStarted and SafeRedone count lock-free lookups that ran in safe
	// mode (Flash only; 0 elsewhere): begun while a writer held the lock,
	// or begun exact, overlapped by a write and redone. Each is one lookup
	// of one index (a Sharded lookup is one per shard).
	SafeStarted uint64 `json:"safe_started,omitempty"`
	SafeRedone  uint64 `json:"safe_redone,omitempty"`
	// Groups are the sliding and state groups' figures (Groups only, and
	// only once a worker sent an event of such a group; nil elsewhere).
	Groups *GroupStats `json:"groups,omitempty"`
}

// Sentinel errors of Apply; test with errors.Is.
var (
	ErrUnknownParent = errors.New("indexer: unknown parent hash")
	ErrSelfParent    = errors.New("indexer: store parented on one of its own blocks")
	ErrBadEvent      = errors.New("indexer: malformed event")
	// ErrGroupEvent refuses a Stored or Removed event of a KV cache group
	// other than full attention (kvevents.Group) in an index that holds
	// full attention only; wrap the index in Groups to take them.
	ErrGroupEvent = fmt.Errorf("indexer: event of a non-full kv cache group: %w", ErrBadEvent)
)
