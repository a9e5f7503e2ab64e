//go:build !amd64 || purego

package kvhash

// useAVX2 is false off amd64: every block goes to xxh3.HashSeed.
var useAVX2 = false

// useAVX512 is false off amd64.
var useAVX512 = false

func hashBlocksAVX2(dst *uint64, p *byte, n, w int, key, lastKey, mergeKey, seqDst *uint64, flipLo, flipHi uint64) {
	panic("kvhash: hashBlocksAVX2 without AVX2")
}

func hashBlocks256AVX512(dst *uint64, p *byte, n, w int, key, lastKey, mergeKey, seqDst, idDst *uint64, flipLo, flipHi uint64) {
	panic("kvhash: hashBlocksAVX512 without AVX-512")
}

func hashBlocks(dst *uint64, p *byte, n, w int, key, lastKey, mergeKey, seqDst, idDst *uint64, flipLo, flipHi uint64) {
	panic("kvhash: hashBlocks without AVX2")
}
