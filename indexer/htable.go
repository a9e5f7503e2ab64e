package indexer

import (
	"iter"
	"math/bits"
)

// htable is a worker's table engine hash -> node/entry index (Radix,
// Flash): open addressing with Robin Hood linear probing over 12-byte
// slots (key halves and value side by side, so that a probe touches one
// cache line where parallel key and value arrays touched two), load factor
// at most 7/8, deletion by backward shift (no tombstones). v == noEntry
// marks an empty slot. A nil *htable is an empty table for get and len.
// Only writers read it (Flash's lookups never do), so slots may move.
//
// The table has any number of slots (a probe starts at the high half of
// hash x len, "fastrange", instead of at the hash's top bits), so a table
// sized by a hint or a first event is 8/7 of it, not the next power of two
// above that, and a full table grows by an eighth (load 7/9 to 7/8: 12
// bytes per key at load 7/8, ~14.6 on average over a growth cycle).
//
// Robin Hood: the keys of a run are kept in the order of their home
// slots, so a probe for an absent key stops at the first slot whose key
// lives farther on (shorter than scanning to the end of the run, which at
// load 7/8 is ~32 slots long on average), and an insertion shifts the rest
// of the run forward by one slot. With plain linear probing the same load
// made every absent-key probe (the common case: engines store new blocks)
// walk the whole run.
//
// Keys are stored mixed (k*pidK1), and the scans that look for a key's
// home, delAt's (stop) and find's, settle most slots by comparing the
// key's high half with a bound instead of computing its home (see stop).
//
// NB: against load at most 3/4 and growth by half, BenchmarkBytesPerBlock
// flash shape=unique went 58.1 -> 54.1 heap bytes per block; mixed keys
// with the stop filter took a callgrind replay of BenchmarkApply flash
// 3234M -> 2978M instructions. The measurements and the alternatives left
// out (a cuckoo table, one table shared by the workers, load 13/16,
// tombstones) are in docs/experiments/indexer-htable.md; plain linear
// probing and buckets with overflow counts, which move fewer slots but
// probe more, and buckets in Robin Hood order, whose moves span as many
// lines, in indexer-write-mlp.md.
type htable struct {
	s []hslot
	n int
	q uint64 // floor((2^64-1)/len(s)): see stop
}

// hslot is one slot: value v under key k, kept mixed: m = k*pidK1 =
// uint64(hi)<<32 | lo (a bijection, since pidK1 is odd), so that a
// slot's home is one multiply of m (see home).
type hslot struct{ lo, hi, v uint32 }

// hslotEmpty is an empty slot. Its hi is the largest, so that stop's
// filter (hi below a bound: not at home) never passes over an empty slot.
var hslotEmpty = hslot{lo: ^uint32(0), hi: ^uint32(0), v: noEntry}

// mixed is the slot's key times pidK1.
func (e *hslot) mixed() uint64 { return uint64(e.hi)<<32 | uint64(e.lo) }

// key is the slot's key.
func (e *hslot) key() uint64 { return e.mixed() * pidK1Inv }

// Load limit: at most htNum/htDen of the slots hold keys.
const htNum, htDen = 7, 8

func newHtable(hint int) *htable {
	t := &htable{}
	t.resize(hint*htDen/htNum + 1)
	return t
}

// resize rehashes into max(8, size) slots.
//
// The old keys go in in slot order, which is their home order (a run is
// in home order, and a home, m*len>>64, grows with m in either table),
// so most go at the first free slot at or after their new home, after
// the key placed before them: no Robin Hood swaps and no probe. The rest
// take insert: the keys of a run that wraps past the old table's end
// (taken last), a key whose new home is below the one before it (keys
// that shared an old home), and a key that would go past the end.
// Measured (callgrind, toggle-collect on Flash.Apply, the whole
// conversation-trace replay of BenchmarkApply flash but without a
// capacity hint, so that the tables grow from the first events): resize
// and insert 1076M -> 582M instructions, the replay 4282M -> 3730M (the
// hinted replay does not resize).
func (t *htable) resize(size int) {
	old := t.s
	t.s = make([]hslot, max(8, size))
	t.q = ^uint64(0) / uint64(len(t.s))
	for i := range t.s {
		t.s[i] = hslotEmpty
	}
	// The old table's first keys may be the tail of a run that wraps.
	w := 0
	for w < len(old) && old[w].v != noEntry && int(mulHi(old[w].mixed(), len(old))) > w {
		w++
	}
	last, lastH := -1, 0 // where the last key went, and its home
	for i := w; i < len(old); i++ {
		e := old[i]
		if e.v == noEntry {
			continue
		}
		h := t.mixedHome(e.mixed())
		if p := max(h, last+1); h >= lastH && p < len(t.s) {
			// Slots lastH..last hold keys (lastH is the last key's home),
			// none is past last: p is free, and its run in home order.
			t.s[p] = e
			last, lastH = p, h
			continue
		}
		// insert fills the free slot at the end of e's run; past last, it
		// is the run's new end (its home order keeps lastH the largest).
		if j := t.insert(e); j > last {
			last = j
		}
	}
	for i := range w {
		t.insert(old[i])
	}
}

// mulHi is the high half of m*n: a home among n slots.
func mulHi(m uint64, n int) uint64 {
	hi, _ := bits.Mul64(m, uint64(n))
	return hi
}

func (t *htable) home(k uint64) int { return t.mixedHome(k * pidK1) }

// mixedHome is the home of the key whose mixed form is m.
func (t *htable) mixedHome(m uint64) int { return int(mulHi(m, len(t.s))) }

// dist is how far slot i (which holds a key) is from its key's home.
func (t *htable) dist(i int) int {
	d := i - t.mixedHome(t.s[i].mixed())
	if d < 0 {
		d += len(t.s)
	}
	return d
}

// next is the slot after i, cyclically.
func (t *htable) next(i int) int {
	if i++; i == len(t.s) {
		return 0
	}
	return i
}

// insert adds absent e (resize): Robin Hood, swapping e with any key
// nearer its home than e is to e's. It returns the slot it filled.
func (t *htable) insert(e hslot) int {
	i, d := t.mixedHome(e.mixed()), 0
	for t.s[i].v != noEntry {
		if di := t.dist(i); di < d {
			e, t.s[i] = t.s[i], e
			d = di
		}
		i, d = t.next(i), d+1
	}
	t.s[i] = e
	return i
}

// find returns the slot holding k and true, or the slot where k would be
// inserted and false (-1 for a nil or empty-capacity table).
func (t *htable) find(k uint64) (int, bool) {
	if t == nil || len(t.s) == 0 {
		return -1, false
	}
	m := k * pidK1
	lo, hi := uint32(m), uint32(m>>32)
	h := t.mixedHome(m)
	// A key whose hi is below bound has its home at or before h (see
	// stop's filter): k is not past it, without the multiply of dist.
	// Only before the probe wraps: past the end, a home before h is
	// after it along the run.
	bound := uint32((uint64(h) + 1) * t.q >> 32)
	for i, d := h, 0; ; d++ {
		e := &t.s[i]
		if e.v == noEntry {
			return i, false
		}
		if e.lo == lo && e.hi == hi {
			return i, true
		}
		// Invariant: a run is in home order, so k is not past a key
		// nearer its own home.
		if e.hi >= bound && t.dist(i) < d {
			return i, false
		}
		if i++; i == len(t.s) {
			i, bound = 0, 0
		}
	}
}

// holds reports whether slot i (any int) holds key k.
func (t *htable) holds(i int, k uint64) bool {
	return uint(i) < uint(len(t.s)) && t.s[i].v != noEntry && t.s[i].mixed() == k*pidK1
}

// slot returns the slot holding k, or -1.
func (t *htable) slot(k uint64) int {
	if t == nil || t.n == 0 {
		return -1
	}
	if i, ok := t.find(k); ok {
		return i
	}
	return -1
}

func (t *htable) get(k uint64) (uint32, bool) {
	if i := t.slot(k); i >= 0 {
		return t.s[i].v, true
	}
	return 0, false
}

// put sets k -> v (v != noEntry).
func (t *htable) put(k uint64, v uint32) {
	i, ok := t.find(k)
	if ok {
		t.s[i].v = v
		return
	}
	t.putAt(i, k, v)
}

// putAt inserts absent k -> v (v != noEntry) at i, the slot find returned
// for k with no change to the table since: the keys from i to the end of
// the run move forward by one.
func (t *htable) putAt(i int, k uint64, v uint32) {
	m := k * pidK1
	e := hslot{lo: uint32(m), hi: uint32(m >> 32), v: v}
	if i < 0 || htDen*(t.n+1) > htNum*len(t.s) {
		t.resize(len(t.s) + len(t.s)/8) // load 7/9 after, 7/8 at most
		t.insert(e)
		t.n++
		return
	}
	// Find the run's end j (its first empty slot), then move [i, j) one
	// slot on with copy: at the load a full worker's table runs at (7/8)
	// the end is tens of slots away, and a swap per slot cost more than
	// the move (see delAt).
	j := t.end(i)
	if j < i { // the run wraps: move [0, j), then the last slot to 0
		copy(t.s[1:j+1], t.s[:j])
		n := len(t.s) - 1
		t.s[0] = t.s[n]
		j = n
	}
	copy(t.s[i+1:j+1], t.s[i:j])
	t.s[i] = e
	t.n++
}

// end returns the first empty slot at or after i, cyclically (there is
// one: the load is at most 7/8). It tests four slots a step (one bounds
// check) where they do not wrap: putAt's scans are tens of slots long.
func (t *htable) end(i int) int {
	s := t.s
	for {
		for i+4 <= len(s) {
			q := s[i : i+4 : i+4]
			switch {
			case q[0].v == noEntry:
				return i
			case q[1].v == noEntry:
				return i + 1
			case q[2].v == noEntry:
				return i + 2
			case q[3].v == noEntry:
				return i + 3
			}
			i += 4
		}
		for ; i < len(s); i++ {
			if s[i].v == noEntry {
				return i
			}
		}
		i = 0
	}
}

// stop returns the first slot at or after j, cyclically, that is empty or
// holds a key at its home: where delAt's move ends.
//
// Most slots it passes hold keys far from their homes, and a filter
// settles those without the multiply of a home: slot j's key is not at
// home when its mixed key m is below the least m whose home is j,
// ceil(j*2^64/n) (homes grow with m), which is at least j*q with q =
// floor((2^64-1)/n); so m's high half below j*q's, hi < (j*q)>>32, says
// "not at home" (sound for any slot, wrapped runs too; an empty slot's
// hi is the largest and never passes). The filter misses only when hi
// equals the bound, about once in 2^32/n slots.
func (t *htable) stop(j int) int {
	s, q := t.s, t.q
	q2, q3, q4 := 2*q, 3*q, 4*q
	for {
		// j*q < 2^64: j < n. Four slots a step, as end; a step whose
		// filter does not settle all four checks them exactly.
		for jq := uint64(j) * q; j+4 <= len(s); j, jq = j+4, jq+q4 {
			w := s[j : j+4 : j+4]
			if w[0].hi < uint32(jq>>32) && w[1].hi < uint32((jq+q)>>32) &&
				w[2].hi < uint32((jq+q2)>>32) && w[3].hi < uint32((jq+q3)>>32) {
				continue
			}
			for k := range w {
				if t.stopsAt(&w[k], j+k) {
					return j + k
				}
			}
		}
		for ; j < len(s); j++ {
			if t.stopsAt(&s[j], j) {
				return j
			}
		}
		j = 0
	}
}

// stopsAt reports whether slot j, e, is empty or holds a key at its home.
func (t *htable) stopsAt(e *hslot, j int) bool {
	return e.v == noEntry || t.mixedHome(e.mixed()) == j
}

// del removes k if present.
func (t *htable) del(k uint64) {
	if i := t.slot(k); i >= 0 {
		t.delAt(i)
	}
}

// delAt empties slot i (which holds a key): the rest of its run moves
// back by one slot, up to a key at its home.
//
// delAt and putAt move a run's keys with copy, after a scan for where the
// move ends, instead of one slot at a time: at load 7/8 runs are long.
// NB: with the scans four slots a step, a callgrind replay of
// BenchmarkApply flash went 3836M -> 3240M instructions (-15.5%), with no
// time difference resolved (docs/experiments/indexer-htable.md).
func (t *htable) delAt(i int) {
	// Find the end j of the keys that move (the first slot after i that
	// is empty or at its key's home), then move (i, j) back with copy.
	j := t.stop(t.next(i))
	if j < i { // wraps: move (i, end], then 0 to the end, then [1, j)
		n := len(t.s) - 1
		copy(t.s[i:n], t.s[i+1:])
		if j > 0 {
			t.s[n] = t.s[0]
			copy(t.s[:j-1], t.s[1:j])
			i = j - 1
		} else {
			i = n
		}
	} else {
		copy(t.s[i:j-1], t.s[i+1:j])
		i = j - 1
	}
	t.s[i] = hslotEmpty
	t.n--
}

func (t *htable) len() int {
	if t == nil {
		return 0
	}
	return t.n
}

// all iterates the pairs in slot order. The table must not change during
// the iteration.
func (t *htable) all() iter.Seq2[uint64, uint32] {
	return func(yield func(uint64, uint32) bool) {
		for i := range t.s {
			if e := &t.s[i]; e.v != noEntry && !yield(e.key(), e.v) {
				return
			}
		}
	}
}

func (t *htable) bytes() int64 { return int64(len(t.s)) * 12 }
