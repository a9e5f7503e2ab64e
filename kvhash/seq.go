package kvhash

import "math/bits"

// The sequence hash is XXH3-64 of a 16-byte input under DefaultSeed
// (DESIGN.md §1). The public XXH3 specification hashes 9..16 bytes with one
// 128-bit multiply whose keys depend only on the seed, so seqNext computes
// it inline with the keys folded into constants instead of calling
// xxh3.HashSeed per block: a prompt's chain is serial, one block after the
// other, so the call and the length dispatch sat on its critical path.
// TestSeqNextMatchesReference holds it equal to xxh3.HashSeed.
const (
	// The default secret's little-endian words at byte offsets 24, 32,
	// 40 and 48, which the 9..16-byte case reads.
	secret24 uint64 = 0x1f67b3b7a4a44072
	secret32 uint64 = 0x78e5c0cc4ee679cb
	secret40 uint64 = 0x2172ffcc7dd05a82
	secret48 uint64 = 0x8e2443f7744608b8

	seqFlipLo = secret24 ^ secret32 + DefaultSeed
	seqFlipHi = secret40 ^ secret48 - DefaultSeed

	// primeMX1 is XXH3's avalanche multiplier.
	primeMX1 uint64 = 0x165667919E3779F9
)

// seqNext is XXH3-64(LE64(parent) || LE64(local), DefaultSeed).
func seqNext(parent, local uint64) uint64 {
	lo := parent ^ seqFlipLo
	hi := local ^ seqFlipHi
	mh, ml := bits.Mul64(lo, hi)
	h := 16 + bits.ReverseBytes64(lo) + hi + (mh ^ ml)
	h ^= h >> 37
	h *= primeMX1
	return h ^ h>>32
}
