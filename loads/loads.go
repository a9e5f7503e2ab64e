package loads

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/internal/invariants"
	"github.com/kvrouter/kvrouter/kvevents"
)

// DefaultStaleAfter is the default stale limit (DESIGN.md §4).
const DefaultStaleAfter = 5 * time.Minute

// Config configures a Tracker.
type Config struct {
	// StaleAfter is how long a request may go without progress (Add,
	// PrefillDone, Touch) before Sweep releases it. Default 5 min; 0 means
	// never sweep.
	StaleAfter time.Duration
}

// DefaultConfig returns the defaults of DESIGN.md §4.
func DefaultConfig() Config { return Config{StaleAfter: DefaultStaleAfter} }

// Validate reports every problem with c.
func (c Config) Validate() error {
	if c.StaleAfter < 0 {
		return fmt.Errorf("loads: StaleAfter %v is negative", c.StaleAfter)
	}
	return nil
}

// Sentinel errors; test with errors.Is.
var (
	ErrUnknownRequest   = errors.New("loads: unknown request")
	ErrDuplicateRequest = errors.New("loads: request already active")
	ErrBadEntry         = errors.New("loads: bad entry")
)

// Load is the active load of one worker+rank.
type Load struct {
	// PrefillTokens is the sum of uncached prompt tokens of the requests
	// still in prefill.
	PrefillTokens int
	// DecodeBlocks is the number of distinct active prompt blocks (each
	// counted once however many requests share it) plus the output blocks
	// of the active requests.
	DecodeBlocks int
	// Requests is the number of active requests (prefill and decode).
	Requests int
	// PrefillRequests is the number of active requests still in prefill.
	PrefillRequests int
}

// String formats l as "prefill=N decode=N reqs=N(pN)".
func (l Load) String() string {
	return fmt.Sprintf("prefill=%d decode=%d reqs=%d(p%d)", l.PrefillTokens, l.DecodeBlocks, l.Requests, l.PrefillRequests)
}

// Entry is one routed request as the tracker sees it.
type Entry struct {
	// ID names the request; unique among active requests.
	ID string
	// Worker is where it was routed.
	Worker kvevents.Worker
	// Blocks are the router sequence hashes of the prompt's full blocks,
	// seq[0..n-1] (kvhash.SeqHashes). The tracker keeps the slice: the
	// caller must not modify it afterwards.
	Blocks []uint64
	// PrefillTokens is isl - cached_tokens (>= 0).
	PrefillTokens int
	// OutputBlocks are extra decode blocks charged for the expected output
	// (0 = not tracked). They are private to the request.
	OutputBlocks int
}

// Stats is a snapshot of a Tracker's counters.
type Stats struct {
	Workers         int    // worker+ranks with at least one active request
	Requests        int    // active requests
	PrefillRequests int    // active requests still in prefill
	Added           uint64 // requests ever added
	Freed           uint64 // requests released by Free or RemoveWorker
	Swept           uint64 // requests released by Sweep
}

type request struct {
	e         Entry
	inPrefill bool
	last      time.Time
}

type worker struct {
	load   Load
	blocks map[uint64]int32 // sequence hash -> active requests holding it
}

// Tracker is the load tracker. The zero value is not usable; call New.
type Tracker struct {
	cfg     Config
	workers map[kvevents.Worker]*worker
	reqs    map[string]*request
	stats   Stats
}

// New returns an empty Tracker.
func New(cfg Config) *Tracker {
	return &Tracker{
		cfg:     cfg,
		workers: make(map[kvevents.Worker]*worker),
		reqs:    make(map[string]*request),
	}
}

// Add records a routed request at now. It fails, changing nothing, when the
// id is already active or the entry is malformed.
func (t *Tracker) Add(e Entry, now time.Time) error {
	if e.PrefillTokens < 0 || e.OutputBlocks < 0 {
		return fmt.Errorf("%w: request %q has negative prefill tokens or output blocks", ErrBadEntry, e.ID)
	}
	if _, ok := t.reqs[e.ID]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicateRequest, e.ID)
	}
	w := t.workers[e.Worker]
	if w == nil {
		w = &worker{blocks: make(map[uint64]int32)}
		t.workers[e.Worker] = w
	}
	for _, h := range e.Blocks {
		n := w.blocks[h]
		if n == 0 {
			w.load.DecodeBlocks++
		}
		w.blocks[h] = n + 1
	}
	w.load.DecodeBlocks += e.OutputBlocks
	w.load.PrefillTokens += e.PrefillTokens
	w.load.Requests++
	w.load.PrefillRequests++
	t.reqs[e.ID] = &request{e: e, inPrefill: true, last: now}
	t.stats.Added++
	t.check(e.Worker)
	return nil
}

// PrefillDone moves a request out of prefill (its first output token
// arrived at now). Calling it twice is harmless.
func (t *Tracker) PrefillDone(id string, now time.Time) error {
	r := t.reqs[id]
	if r == nil {
		return fmt.Errorf("%w: %q", ErrUnknownRequest, id)
	}
	r.last = now
	if !r.inPrefill {
		return nil
	}
	r.inPrefill = false
	w := t.workers[r.e.Worker]
	w.load.PrefillTokens -= r.e.PrefillTokens
	w.load.PrefillRequests--
	t.check(r.e.Worker)
	return nil
}

// Touch records progress of a request at now (e.g. output tokens), so that
// Sweep does not release it.
func (t *Tracker) Touch(id string, now time.Time) error {
	r := t.reqs[id]
	if r == nil {
		return fmt.Errorf("%w: %q", ErrUnknownRequest, id)
	}
	r.last = now
	return nil
}

// Free releases a request (finished, failed or cancelled).
func (t *Tracker) Free(id string) error {
	r := t.reqs[id]
	if r == nil {
		return fmt.Errorf("%w: %q", ErrUnknownRequest, id)
	}
	t.release(r)
	t.stats.Freed++
	return nil
}

func (t *Tracker) release(r *request) {
	delete(t.reqs, r.e.ID)
	w := t.workers[r.e.Worker]
	if r.inPrefill {
		w.load.PrefillTokens -= r.e.PrefillTokens
		w.load.PrefillRequests--
	}
	for _, h := range r.e.Blocks {
		n := w.blocks[h] - 1
		if n <= 0 {
			delete(w.blocks, h)
			w.load.DecodeBlocks--
		} else {
			w.blocks[h] = n
		}
	}
	w.load.DecodeBlocks -= r.e.OutputBlocks
	w.load.Requests--
	t.check(r.e.Worker)
	if w.load.Requests == 0 {
		delete(t.workers, r.e.Worker)
	}
}

// Sweep releases every request without progress for longer than
// Config.StaleAfter at now and returns their ids, sorted.
func (t *Tracker) Sweep(now time.Time) []string {
	if t.cfg.StaleAfter <= 0 {
		return nil
	}
	var ids []string
	for id, r := range t.reqs {
		if now.Sub(r.last) > t.cfg.StaleAfter {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		t.release(t.reqs[id])
		t.stats.Swept++
	}
	return ids
}

// RemoveWorker releases every request on any rank of worker id and returns
// their ids, sorted.
func (t *Tracker) RemoveWorker(id uint64) []string {
	var ids []string
	for rid, r := range t.reqs {
		if r.e.Worker.ID == id {
			ids = append(ids, rid)
		}
	}
	slices.Sort(ids)
	for _, rid := range ids {
		t.release(t.reqs[rid])
		t.stats.Freed++
	}
	return ids
}

// Load returns the current load of w (zero when idle or unknown).
func (t *Tracker) Load(w kvevents.Worker) Load {
	if x := t.workers[w]; x != nil {
		return x.load
	}
	return Load{}
}

// NewBlocks returns how many of the prompt blocks seq (router sequence
// hashes, seq[0..n-1] of one prompt) are not yet active on w: the decode
// blocks routing the request there would add.
//
// NB: the active set is prefix-closed (see the package doc), so the number
// of active blocks of seq is the length of its longest active prefix, found
// by binary search.
func (t *Tracker) NewBlocks(w kvevents.Worker, seq []uint64) int {
	x := t.workers[w]
	if x == nil || len(seq) == 0 {
		return len(seq)
	}
	// Longest prefix: smallest i with seq[i] not active.
	lo, hi := 0, len(seq)
	if _, ok := x.blocks[seq[0]]; !ok {
		hi = 0
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if _, ok := x.blocks[seq[mid]]; ok {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if invariants.Enabled {
		active := 0
		for i, h := range seq {
			if _, ok := x.blocks[h]; ok {
				if i != active {
					panic(fmt.Sprintf("loads: active set of %s not prefix-closed at block %d", w, i))
				}
				active++
			}
		}
		if active != lo {
			panic(fmt.Sprintf("loads: NewBlocks binary search found %d active blocks, linear %d", lo, active))
		}
	}
	return len(seq) - lo
}

// Potential returns the load of w if a request with prompt blocks seq,
// prefillTokens uncached tokens and outputBlocks output blocks were routed
// there now.
func (t *Tracker) Potential(w kvevents.Worker, seq []uint64, prefillTokens, outputBlocks int) Load {
	l := t.Load(w)
	l.PrefillTokens += prefillTokens
	l.DecodeBlocks += t.NewBlocks(w, seq) + outputBlocks
	l.Requests++
	l.PrefillRequests++
	return l
}

// Request returns the entry of an active request and whether it is still in
// prefill.
func (t *Tracker) Request(id string) (e Entry, inPrefill, ok bool) {
	r := t.reqs[id]
	if r == nil {
		return Entry{}, false, false
	}
	return r.e, r.inPrefill, true
}

// Stats returns a snapshot of the counters.
func (t *Tracker) Stats() Stats {
	s := t.stats
	s.Workers = len(t.workers)
	s.Requests = len(t.reqs)
	for _, w := range t.workers {
		s.PrefillRequests += w.load.PrefillRequests
	}
	return s
}

// Workers returns the worker+ranks with active requests, sorted.
func (t *Tracker) Workers() []kvevents.Worker {
	ws := make([]kvevents.Worker, 0, len(t.workers))
	for w := range t.workers {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, cmpWorker)
	return ws
}

func cmpWorker(a, b kvevents.Worker) int {
	if a.Less(b) {
		return -1
	}
	if b.Less(a) {
		return 1
	}
	return 0
}

// String prints every busy worker's load, then every active request, sorted;
// "idle" when nothing is active. For tests and debugging.
func (t *Tracker) String() string {
	if len(t.reqs) == 0 {
		return "idle\n"
	}
	var b strings.Builder
	for _, w := range t.Workers() {
		fmt.Fprintf(&b, "w%s: %s\n", w, t.workers[w].load)
	}
	ids := make([]string, 0, len(t.reqs))
	for id := range t.reqs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r := t.reqs[id]
		phase := "decode"
		if r.inPrefill {
			phase = "prefill"
		}
		fmt.Fprintf(&b, "  %s on w%s: %s blocks=%d prefill=%d", id, r.e.Worker, phase, len(r.e.Blocks), r.e.PrefillTokens)
		if r.e.OutputBlocks > 0 {
			fmt.Fprintf(&b, " out=%d", r.e.OutputBlocks)
		}
		fmt.Fprintf(&b, " last=%s\n", r.last.UTC().Format("15:04:05.000"))
	}
	return b.String()
}

// check verifies w's counters against its requests (invariants builds only).
func (t *Tracker) check(wk kvevents.Worker) {
	if !invariants.Enabled {
		return
	}
	w := t.workers[wk]
	if w == nil {
		return
	}
	l := w.load
	if l.PrefillTokens < 0 || l.DecodeBlocks < 0 || l.Requests < 0 || l.PrefillRequests < 0 {
		panic(fmt.Sprintf("loads: negative counter on w%s: %s", wk, l))
	}
	var want Load
	refs := make(map[uint64]int32)
	for _, r := range t.reqs {
		if r.e.Worker != wk {
			continue
		}
		want.Requests++
		want.DecodeBlocks += r.e.OutputBlocks
		if r.inPrefill {
			want.PrefillRequests++
			want.PrefillTokens += r.e.PrefillTokens
		}
		for _, h := range r.e.Blocks {
			refs[h]++
		}
	}
	want.DecodeBlocks += len(refs)
	if want != l {
		panic(fmt.Sprintf("loads: counters of w%s are %s, requests sum to %s", wk, l, want))
	}
	if len(refs) != len(w.blocks) {
		panic(fmt.Sprintf("loads: w%s holds %d refcounted blocks, requests %d", wk, len(w.blocks), len(refs)))
	}
	for h, n := range refs {
		if w.blocks[h] != n {
			panic(fmt.Sprintf("loads: block %d on w%s refcount %d, want %d", h, wk, w.blocks[h], n))
		}
	}
}
