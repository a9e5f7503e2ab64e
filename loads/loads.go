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
	StaleAfter time.Duration `yaml:"stale_after"`
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
	// seq[0..n-1] (kvhash.SeqHashes), or any chain naming each prefix as
	// they do (the router passes kvhash.AppendPrefixIDs), one kind per
	// tracker. The tracker copies them: the caller
	// may reuse the slice once Add returns.
	Blocks []uint64
	// PrefillTokens is isl - cached_tokens (>= 0).
	PrefillTokens int
	// OutputBlocks are extra decode blocks charged for the expected output
	// (0 = not tracked). They are private to the request.
	OutputBlocks int
	// Origin is the router replica that routed the request: "" (the
	// default) for this one, another replica's id for a booking learnt
	// through load sync (DESIGN.md §9). It changes no cost, only the
	// Breakdown and RemoveOrigin.
	Origin string
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
	added     time.Time // Add's now (Routed)
	slot      int32
	blocks    []uint64 // the tracker's copy of e.Blocks (e.Blocks aliases it)
	nodes     []int32  // node of every block, so release needs no lookups
}

// slot is the dense state of one worker+rank.
type slot struct {
	w    kvevents.Worker
	load Load
	held int  // nodes this slot holds (its distinct active blocks)
	pass Pass // the pass in flight (pass.go)
	// arr is the prefill routed since pass.Start (passqueue.go).
	arr []Arrival
}

// Tracker is the load tracker. The zero value is not usable; call New.
//
// Layout: every worker+rank gets a dense slot (slotOf); the active blocks of
// all slots live in one index from sequence hash to node, each node listing
// its holder slots with reference counts. Because every slot's active set is
// prefix-closed, the holders of seq[i+1] are a subset of those of seq[i],
// which lets NewBlocksBySlot answer for every slot with one walk down the
// prompt.
type Tracker struct {
	cfg       Config
	slotOf    map[kvevents.Worker]int32
	slots     []slot
	freeSlots []int32
	busy      int // slots with active requests

	index     table // sequence hash -> node
	nodes     []node
	freeNodes []int32
	dead      int     // nodes in index without holders
	deadList  []int32 // every dead node (and some revived ones), for collect
	swept     int     // deadList[:swept] visited by the collection under way (0: none)

	reqs  map[string]*request
	spare []*request // released requests, for reuse
	stats Stats

	// last caches the nodes of the last Add's blocks by position: prompts
	// routed one after another often share a prefix (a system prompt, a
	// conversation's history), whose blocks then need no index probe.
	// lastHash holds each one's block: nodes leave the index only in
	// collect, which empties both, so last[i] is the node of lastHash[i]
	// and a block equal to lastHash[i] needs no look at its node either
	// (one sequential compare instead of a node read per block).
	last     []int32
	lastHash []uint64

	// books numbers the Adds, marking the nodes each booked (node.seen).
	books uint32
}

// New returns an empty Tracker.
func New(cfg Config) *Tracker {
	return &Tracker{
		cfg:    cfg,
		slotOf: make(map[kvevents.Worker]int32),
		reqs:   make(map[string]*request),
	}
}

// Slot returns the dense slot of w (0 <= slot < Slots()), assigning one when
// w is new. A worker keeps its slot until RemoveWorker of its id, after which
// the slot may go to another worker. Slots let a caller that scores every
// worker read loads without map lookups (LoadAt, NewBlocksBySlot).
func (t *Tracker) Slot(w kvevents.Worker) int {
	return int(t.slotFor(w))
}

func (t *Tracker) slotFor(w kvevents.Worker) int32 {
	if s, ok := t.slotOf[w]; ok {
		return s
	}
	var s int32
	if n := len(t.freeSlots); n > 0 {
		s = t.freeSlots[n-1]
		t.freeSlots = t.freeSlots[:n-1]
		t.slots[s] = slot{w: w}
	} else {
		s = int32(len(t.slots))
		t.slots = append(t.slots, slot{w: w})
	}
	t.slotOf[w] = s
	return s
}

// Slots returns the number of slots (assigned or free): every slot returned
// by Slot is below it.
func (t *Tracker) Slots() int { return len(t.slots) }

// LoadAt returns the load of the worker at slot s (see Slot).
func (t *Tracker) LoadAt(s int) Load { return t.slots[s].load }

func (t *Tracker) newRequest() *request {
	if n := len(t.spare); n > 0 {
		r := t.spare[n-1]
		t.spare = t.spare[:n-1]
		return r
	}
	return &request{}
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
	s := t.slotFor(e.Worker)
	st := &t.slots[s]
	r := t.newRequest()
	r.blocks = append(r.blocks[:0], e.Blocks...)
	e.Blocks = r.blocks
	r.nodes = slices.Grow(r.nodes[:0], len(e.Blocks))[:len(e.Blocks)]
	// Two passes, each a short loop whose values stay in registers: find
	// every block's node (the cache of the last Add's, else the index),
	// then book the slot on them (bookUnheld, bookHeld). Counts are kept
	// in locals and stored after the loops: the stores through nd could
	// alias them, so counting in place would make every block wait for
	// the previous block's store.
	last, lastHash, rn := t.last, t.lastHash, r.nodes
	created := 0
	k := sharedPrefix(e.Blocks, lastHash[:len(last)]) // the blocks shared with the last Add's, from the first
	copy(rn, last[:k])
	t.index.warm(e.Blocks[k:])
	// Past the shared prefix no block equals the cached one at its
	// position (a sequence hash names its whole prefix), and one that did
	// would find the same node in the index.
	for i := k; i < len(e.Blocks); i++ {
		h := e.Blocks[i]
		ni, found := t.nodeOf(h)
		if !found {
			created++
		}
		if i < len(last) {
			last[i], lastHash[i] = ni, h
		}
		rn[i] = ni
	}
	// unheld: nodes without a live holder before.
	t.books++
	unheld := bookUnheld(t.nodes, rn, s, t.books)
	held, more := bookHeld(t.nodes, rn[unheld:], s, t.books)
	unheld += more
	held += unheld
	revived := unheld - created // the new nodes were not dead
	t.dead -= revived
	st.load.DecodeBlocks += held
	st.held += held
	if len(last) < len(r.nodes) {
		t.last = append(last, r.nodes[len(last):]...)
		t.lastHash = append(lastHash, e.Blocks[len(lastHash):]...)
	}
	if invariants.Enabled {
		for i, ni := range t.last {
			if nd := &t.nodes[ni]; nd.free || nd.hash != t.lastHash[i] {
				panic(fmt.Sprintf("loads: last[%d] = node %d (hash %x, free %v), cached as hash %x", i, ni, nd.hash, nd.free, t.lastHash[i]))
			}
		}
	}
	if st.load.Requests == 0 {
		t.busy++
		// An idle engine starts a pass at once.
		st.pass = Pass{Start: now, Tokens: e.PrefillTokens}
		st.arr = st.arr[:0]
	} else {
		st.arrive(now, e.PrefillTokens)
	}
	st.load.DecodeBlocks += e.OutputBlocks
	st.load.PrefillTokens += e.PrefillTokens
	st.load.Requests++
	st.load.PrefillRequests++
	r.e, r.inPrefill, r.last, r.added, r.slot = e, true, now, now, s
	t.reqs[e.ID] = r
	t.stats.Added++
	t.check(s)
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
	st := &t.slots[r.slot]
	st.load.PrefillTokens -= r.e.PrefillTokens
	st.load.PrefillRequests--
	// A first token ends a pass; the next starts with what is pending.
	st.pass = Pass{Start: now, Tokens: st.load.PrefillTokens}
	st.arr = st.arr[:0]
	t.check(r.slot)
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
	s := r.slot
	st := &t.slots[s]
	if r.inPrefill {
		st.load.PrefillTokens -= r.e.PrefillTokens
		st.load.PrefillRequests--
		st.unarrive(r.added, r.e.PrefillTokens)
	}
	dropped, died := t.releaseBlocks(r.nodes, s)
	st.load.DecodeBlocks -= dropped
	st.held -= dropped
	t.dead += died
	st.load.DecodeBlocks -= r.e.OutputBlocks
	st.load.Requests--
	if st.load.Requests == 0 {
		t.busy--
		st.pass = Pass{}
		st.arr = st.arr[:0]
	}
	t.check(s)
	r.e = Entry{}
	t.spare = append(t.spare, r)
	// Twice the blocks released: the dead list shrinks while a
	// collection is under way.
	t.collect(2 * len(r.nodes))
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
// their ids, sorted. The worker's slots are freed for reuse.
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
	for s := range t.slots {
		st := &t.slots[s]
		if st.w.ID != id {
			continue
		}
		if cur, ok := t.slotOf[st.w]; !ok || cur != int32(s) {
			continue // already free
		}
		delete(t.slotOf, st.w)
		*st = slot{}
		t.freeSlots = append(t.freeSlots, int32(s))
	}
	return ids
}

// Load returns the current load of w (zero when idle or unknown).
func (t *Tracker) Load(w kvevents.Worker) Load {
	if s, ok := t.slotOf[w]; ok {
		return t.slots[s].load
	}
	return Load{}
}

// holds reports whether slot s holds block h.
func (t *Tracker) holds(s int32, h uint64) bool {
	ni, ok := t.index.get(h)
	return ok && t.nodes[ni].find(s) != nil
}

// NewBlocks returns how many of the prompt blocks seq (router sequence
// hashes, seq[0..n-1] of one prompt) are not yet active on w: the decode
// blocks routing the request there would add.
//
// NB: the active set is prefix-closed (see the package doc), so the number
// of active blocks of seq is the length of its longest active prefix, found
// by binary search.
func (t *Tracker) NewBlocks(w kvevents.Worker, seq []uint64) int {
	s, ok := t.slotOf[w]
	if !ok || t.slots[s].held == 0 || len(seq) == 0 {
		return len(seq)
	}
	// Longest prefix: smallest i with seq[i] not active.
	lo, hi := 0, len(seq)
	if !t.holds(s, seq[0]) {
		hi = 0
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if t.holds(s, seq[mid]) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if invariants.Enabled {
		active := 0
		for i, h := range seq {
			if t.holds(s, h) {
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

// NewBlocksBySlot sets dst[s] to NewBlocks(worker of slot s, seq) for every
// slot s < Slots() (free slots get len(seq)) and returns dst, grown as
// needed. It serves all workers at once: every active set is
// prefix-closed, so the holders of seq[i+1] are a subset of those of seq[i]
// and their number never grows along seq; a galloping search finds each
// block after which it shrinks, and only those blocks' holders are visited.
// Lookups: O(k log n) for k distinct depths among the workers holding the
// prompt, not O(workers log n) nor O(n).
func (t *Tracker) NewBlocksBySlot(seq []uint64, dst []int) []int {
	n := len(seq)
	dst = slices.Grow(dst[:0], len(t.slots))[:len(t.slots)]
	for i := range dst {
		dst[i] = n
	}
	if t.busy == 0 || n == 0 {
		return dst
	}
	cnt := func(i int) (*node, int) {
		if ni, ok := t.index.get(seq[i]); ok {
			nd := &t.nodes[ni]
			return nd, nd.count()
		}
		return nil, 0
	}
	nd, c := cnt(0)
	for i := 0; c > 0; {
		// Find the last j >= i with cnt(j) == c: gallop, then bisect
		// (lo has count c, hi has fewer or is n).
		lo, hi := i, n
		for step := 1; lo+step < n; step *= 2 {
			x, cx := cnt(lo + step)
			if cx != c {
				hi = lo + step
				break
			}
			lo, nd = lo+step, x
		}
		for hi-lo > 1 {
			mid := int(uint(lo+hi) >> 1)
			if x, cx := cnt(mid); cx == c {
				lo, nd = mid, x
			} else {
				hi = mid
			}
		}
		// Holders of seq[lo] hold lo+1 blocks at least; those holding
		// more are overwritten at a later change.
		for _, hd := range nd.rest {
			dst[hd.slot] = n - lo - 1
		}
		dst[nd.first.slot] = n - lo - 1
		if hi == n {
			break
		}
		i = hi
		nd, c = cnt(hi)
	}
	if invariants.Enabled {
		for s := range t.slots {
			if _, ok := t.slotOf[t.slots[s].w]; !ok {
				continue
			}
			if want := t.NewBlocks(t.slots[s].w, seq); dst[s] != want {
				panic(fmt.Sprintf("loads: NewBlocksBySlot of w%s = %d, NewBlocks %d", t.slots[s].w, dst[s], want))
			}
		}
	}
	return dst
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
// prefill. The entry's Blocks is the tracker's copy: valid until the
// request is released, and not to be modified.
func (t *Tracker) Request(id string) (e Entry, inPrefill, ok bool) {
	r := t.reqs[id]
	if r == nil {
		return Entry{}, false, false
	}
	return r.e, r.inPrefill, true
}

// Routed returns active request id's entry and the time Add recorded it
// at. e.Blocks is the tracker's copy: valid until the request is released.
func (t *Tracker) Routed(id string) (e Entry, at time.Time, ok bool) {
	r := t.reqs[id]
	if r == nil {
		return Entry{}, time.Time{}, false
	}
	return r.e, r.added, true
}

// Stats returns a snapshot of the counters.
func (t *Tracker) Stats() Stats {
	s := t.stats
	s.Workers = t.busy
	s.Requests = len(t.reqs)
	for i := range t.slots {
		s.PrefillRequests += t.slots[i].load.PrefillRequests
	}
	return s
}

// Workers returns the worker+ranks with active requests, sorted.
func (t *Tracker) Workers() []kvevents.Worker {
	ws := make([]kvevents.Worker, 0, t.busy)
	for i := range t.slots {
		if t.slots[i].load.Requests > 0 {
			ws = append(ws, t.slots[i].w)
		}
	}
	slices.SortFunc(ws, kvevents.Worker.Compare)
	return ws
}

// String prints every busy worker's load, then every active request, sorted;
// "idle" when nothing is active. For tests and debugging.
func (t *Tracker) String() string {
	if len(t.reqs) == 0 {
		return "idle\n"
	}
	var b strings.Builder
	for _, w := range t.Workers() {
		fmt.Fprintf(&b, "w%s: %s\n", w, t.Load(w))
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
		fmt.Fprintf(&b, "  %s on w%s", id, r.e.Worker)
		if r.e.Origin != "" {
			fmt.Fprintf(&b, " from %s", r.e.Origin)
		}
		fmt.Fprintf(&b, ": %s blocks=%d prefill=%d", phase, len(r.e.Blocks), r.e.PrefillTokens)
		if r.e.OutputBlocks > 0 {
			fmt.Fprintf(&b, " out=%d", r.e.OutputBlocks)
		}
		fmt.Fprintf(&b, " last=%s\n", r.last.UTC().Format("15:04:05.000"))
	}
	return b.String()
}

// check verifies slot s's counters against its requests and the block
// index (invariants builds only).
func (t *Tracker) check(s int32) {
	if !invariants.Enabled {
		return
	}
	st := &t.slots[s]
	wk, l := st.w, st.load
	if l.PrefillTokens < 0 || l.DecodeBlocks < 0 || l.Requests < 0 || l.PrefillRequests < 0 {
		panic(fmt.Sprintf("loads: negative counter on w%s: %s", wk, l))
	}
	var want Load
	refs := make(map[uint64]int32)
	for _, r := range t.reqs {
		if r.e.Worker != wk {
			continue
		}
		if r.slot != s {
			panic(fmt.Sprintf("loads: request %q of w%s in slot %d, want %d", r.e.ID, wk, r.slot, s))
		}
		want.Requests++
		want.DecodeBlocks += r.e.OutputBlocks
		if r.inPrefill {
			want.PrefillRequests++
			want.PrefillTokens += r.e.PrefillTokens
		}
		for i, h := range r.e.Blocks {
			refs[h]++
			if ni, ok := t.index.get(h); !ok || ni != r.nodes[i] || t.nodes[ni].hash != h {
				panic(fmt.Sprintf("loads: request %q block %d has a stale node", r.e.ID, i))
			}
		}
	}
	want.DecodeBlocks += len(refs)
	if want != l {
		panic(fmt.Sprintf("loads: counters of w%s are %s, requests sum to %s", wk, l, want))
	}
	if len(refs) != st.held {
		panic(fmt.Sprintf("loads: w%s holds %d refcounted blocks, requests %d", wk, st.held, len(refs)))
	}
	for h, n := range refs {
		ni, ok := t.index.get(h)
		var got int32
		if ok {
			if hd := t.nodes[ni].find(s); hd != nil {
				got = hd.refs
			}
		}
		if got != n {
			panic(fmt.Sprintf("loads: block %d on w%s refcount %d, want %d", h, wk, got, n))
		}
	}
	if t.index.len() <= 4096 {
		// Small enough: also no stray holder entries anywhere, the dead
		// count is right and every key is reachable in the table.
		held, dead, keys := 0, 0, 0
		for _, ts := range t.index.slots {
			if ts.val == 0 {
				continue
			}
			keys++
			nd := &t.nodes[ts.val-1]
			if ni, ok := t.index.get(ts.key); !ok || ni != ts.val-1 || nd.hash != ts.key {
				panic(fmt.Sprintf("loads: block %d unreachable in the index", ts.key))
			}
			if nd.count() == 0 {
				dead++
			}
			if nd.find(s) != nil {
				held++
			}
		}
		if held != st.held || dead != t.dead || keys != t.index.len() {
			panic(fmt.Sprintf("loads: w%s appears in %d nodes, want %d; %d dead nodes, counted %d; %d keys, counted %d",
				wk, held, st.held, dead, t.dead, keys, t.index.len()))
		}
	}
}
