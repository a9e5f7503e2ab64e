package tokenizer

import "math/bits"

// tokenTable maps a token's raw bytes to its id, for the BPE core's rank
// lookups (a piece, then every candidate pair while merging). Go's map of
// strings spent ~75% of uncached encoding time on real text: a hash of
// the string, a probe of the control bytes, then a compare against key
// bytes stored elsewhere (two cache misses). Here tokens of up to 16 bytes
// (nearly the whole vocabulary) sit inline in an open-addressing table, so
// a lookup is two word loads, a multiply and, mostly, one cache line;
// longer ones fall back to a map.
type tokenTable struct {
	slots []tokenSlot
	shift uint // 64 - log2(len(slots))
	long  map[string]uint32
}

// tokenSlot is one inline token: its bytes zero-padded to 16 (k0, k1) and
// meta = len<<32 | id. meta 0 marks an empty slot (no token is empty).
type tokenSlot struct {
	k0, k1 uint64
	meta   uint64
}

// inlineToken is the longest token kept inline.
const inlineToken = 16

func newTokenTable(ranks map[string]int) *tokenTable {
	n := 0
	for s := range ranks {
		if len(s) <= inlineToken && s != "" {
			n++
		}
	}
	// Load factor at most 5/8: linear probes stay short.
	logSize := max(4, bits.Len(uint(n*8/5)))
	t := &tokenTable{slots: make([]tokenSlot, 1<<logSize), shift: uint(64 - logSize), long: map[string]uint32{}}
	mask := uint64(len(t.slots) - 1)
	for s, id := range ranks {
		if len(s) > inlineToken || s == "" {
			t.long[s] = uint32(id)
			continue
		}
		k0, k1 := tokenKey(s)
		i := t.home(k0, k1, len(s))
		for t.slots[i].meta != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = tokenSlot{k0: k0, k1: k1, meta: uint64(len(s))<<32 | uint64(uint32(id))}
	}
	return t
}

// get returns the id of the token whose bytes are s.
func (t *tokenTable) get(s string) (uint32, bool) {
	n := len(s)
	if n > inlineToken || n == 0 {
		id, ok := t.long[s]
		return id, ok
	}
	k0, k1 := tokenKey(s)
	mask := uint64(len(t.slots) - 1)
	want := uint64(n) << 32
	for i := t.home(k0, k1, n); ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.meta == 0 {
			return 0, false
		}
		if sl.k0 == k0 && sl.k1 == k1 && sl.meta&^0xFFFFFFFF == want {
			return uint32(sl.meta), true
		}
	}
}

// home is the first slot probed for a key.
func (t *tokenTable) home(k0, k1 uint64, n int) uint64 {
	h := (k0 ^ uint64(n)<<59) * 0x9E3779B97F4A7C15
	h ^= k1 * 0xC2B2AE3D27D4EB4F
	h ^= h >> 29
	return (h * 0x94D049BB133111EB) >> t.shift
}

// tokenKey packs s (1 to 16 bytes) into two little-endian words, zero
// padded, with at most four loads: overlapping loads read the tail without
// a byte loop (the overlapped bytes are the same, so OR keeps them).
func tokenKey(s string) (k0, k1 uint64) {
	switch n := len(s); {
	case n >= 8:
		k0 = le64(s)
		if n > 8 {
			k1 = le64(s[n-8:]) >> (8 * (16 - n))
		}
	case n >= 4:
		k0 = uint64(le32(s)) | uint64(le32(s[n-4:]))<<(8*(n-4))
	default: // 1 to 3 bytes
		k0 = uint64(s[0]) | uint64(s[n/2])<<(8*(n/2)) | uint64(s[n-1])<<(8*(n-1))
	}
	return k0, k1
}

// le64 and le32 read s's first 8 or 4 bytes little-endian (the compiler
// turns each into one load).
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}
