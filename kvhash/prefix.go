package kvhash

// Prefix ids are a cheap chained name of a prefix for in-memory indexes
// (indexer.Flash keys its entries by them): id[0] = local[0], id[i] =
// PrefixNext(id[i-1], local[i]). They are not DESIGN.md §1's sequence
// hashes and no wire format: nothing outside one process sees them, so
// they trade xxh3's mixing for a one-multiply critical path. A router that
// hashes a prompt and then looks it up computes them with the prompt's
// hashes (AppendLocalSeqID), where the chain costs nothing beside the
// sequence chain's longer step, instead of in the lookup, where it was a
// serial 6-cycle step per block ahead of the probes.

// Prefix-id mixing constants (odd 64-bit multipliers).
const (
	PrefixK1 = 0x9e3779b97f4a7c15
	PrefixK2 = 0xbf58476d1ce4e5b9
)

// PrefixNext returns the prefix id of the prefix whose parent has id
// parent and whose last block has local hash local: B(parent ^
// local*PrefixK1) with B(x) = y ^ y>>32, y = x*PrefixK2, a bijection.
// Because B and x -> x^c are bijections, two prefixes of one length that
// differ in one position only, or share their suffix after the first
// difference, never collide (siblings and equal locals under different
// parents are always distinct); other collisions need two 64-bit
// coincidences.
func PrefixNext(parent, local uint64) uint64 {
	y := (parent ^ local*PrefixK1) * PrefixK2
	return y ^ y>>32
}

// AppendPrefixIDs appends the prefix ids of locals to dst and returns the
// extended slice.
func AppendPrefixIDs(dst, locals []uint64) []uint64 {
	if len(locals) == 0 {
		return dst
	}
	id := locals[0]
	dst = append(dst, id)
	for _, l := range locals[1:] {
		id = PrefixNext(id, l)
		dst = append(dst, id)
	}
	return dst
}

// AppendLocalID appends the local hashes of the full blocks of tokens to
// locals, as AppendLocal, and their prefix ids to ids, as AppendPrefixIDs
// of them. Where blocks are hashed in AVX-512 (long.go) the id chain runs
// beside the hashing.
func AppendLocalID(locals, ids []uint64, tokens []uint32, blockSize int, seed uint64) ([]uint64, []uint64) {
	locals, _, ids = appendLocal(locals, nil, ids, false, true, tokens, blockSize, seed)
	return locals, ids
}

// AppendLocalSeqID is AppendLocalSeq that also appends the blocks' prefix
// ids to ids (as AppendPrefixIDs of the local hashes). Where blocks are
// hashed in AVX-512 (long.go) the id chain runs beside the hashing.
func AppendLocalSeqID(locals, seqs, ids []uint64, tokens []uint32, blockSize int, seed uint64) ([]uint64, []uint64, []uint64) {
	return appendLocal(locals, seqs, ids, true, true, tokens, blockSize, seed)
}
