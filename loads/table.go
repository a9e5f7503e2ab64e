package loads

// table maps a block's sequence hash to its node: open addressing with
// linear probing over 16-byte slots (key, node+1; 0 = empty), load factor
// at most 1/2, and backward-shift deletion (no tombstones). It replaces a
// map[uint64]int32 on the tracker's hottest path (every block of every
// Add and of collect): probes touch one cache line and never hash the key
// beyond one multiply, since sequence hashes are already uniform (the
// multiply spreads test hashes like 1, 2, 3).
type table struct {
	slots []tslot
	n     int
	shift uint   // 64 - log2(len(slots))
	sink  uint64 // warm's loads, kept so that they are not dropped
}

type tslot struct {
	key uint64
	val int32 // node + 1; 0 = empty
}

const (
	tableMin = 64
	fib      = 0x9E3779B97F4A7C15
)

func (t *table) home(key uint64) uint64 { return (key * fib) >> t.shift }

// get returns the node of key.
func (t *table) get(key uint64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.val == 0 {
			return 0, false
		}
		if s.key == key {
			return s.val - 1, true
		}
	}
}

// warm loads the home slot of every key, so that the get of each that
// follows finds it in cache: these loads do not depend on each other, so
// their cache misses overlap, where get's probes wait for one another
// (Add looks up the blocks of a prompt new to the tracker, each slot a
// miss in a table of a live server's size).
func (t *table) warm(keys []uint64) {
	if t.n == 0 {
		return
	}
	var x uint64
	for _, k := range keys {
		x ^= t.slots[t.home(k)].key
	}
	t.sink = x
}

// put maps key (absent) to node ni.
func (t *table) put(key uint64, ni int32) {
	if 2*(t.n+1) > len(t.slots) {
		t.resize(max(tableMin, 2*len(t.slots)))
	}
	t.insert(key, ni+1)
	t.n++
}

func (t *table) insert(key uint64, v int32) {
	mask := uint64(len(t.slots) - 1)
	i := t.home(key)
	for t.slots[i].val != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = tslot{key: key, val: v}
}

func (t *table) resize(n int) {
	old := t.slots
	t.slots = make([]tslot, n)
	t.shift = uint(64 - log2(n))
	for _, s := range old {
		if s.val != 0 {
			t.insert(s.key, s.val)
		}
	}
}

func log2(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	return k
}

// del removes key (present or not), shifting the rest of its run back so
// that every key stays reachable from its home slot.
func (t *table) del(key uint64) {
	if t.n == 0 {
		return
	}
	mask := uint64(len(t.slots) - 1)
	i := t.home(key)
	for {
		s := &t.slots[i]
		if s.val == 0 {
			return
		}
		if s.key == key {
			break
		}
		i = (i + 1) & mask
	}
	// i is the hole; move back any later entry whose home does not lie
	// cyclically in (i, j].
	for j := (i + 1) & mask; t.slots[j].val != 0; j = (j + 1) & mask {
		h := t.home(t.slots[j].key)
		if (j-h)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = tslot{}
	t.n--
}

// len returns the number of keys.
func (t *table) len() int { return t.n }
