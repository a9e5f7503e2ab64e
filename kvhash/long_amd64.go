//go:build amd64 && !purego

package kvhash

// hashBlocksAVX2 stores at dst[i] the XXH3-64 of the i-th of n blocks of
// w bytes from p, 240 < w <= 1024, under the secret whose words, last
// stripe key and merge key start at key, lastKey and mergeKey; with
// seqDst not nil, it stores their sequence-hash chain at seqDst[i]
// (seqNext with the keys flipLo and flipHi).
//
//go:noescape
func hashBlocksAVX2(dst *uint64, p *byte, n, w int, key, lastKey, mergeKey, seqDst *uint64, flipLo, flipHi uint64)

// hashBlocks256AVX512 is hashBlocksAVX2 for 240 < w <= 256 (blocks of
// 61 to 64 tokens, the default 64 among them) in AVX-512
// (long512_amd64.s). With idDst not nil it also stores the blocks'
// prefix ids (AppendPrefixIDs) at idDst[i].
//
//go:noescape
func hashBlocks256AVX512(dst *uint64, p *byte, n, w int, key, lastKey, mergeKey, seqDst, idDst *uint64, flipLo, flipHi uint64)

// hashBlocks is hashBlocks256AVX512 where the CPU has AVX-512 and the
// blocks fit it, else hashBlocksAVX2 (useAVX2 must hold), which takes no
// idDst (nil).
func hashBlocks(dst *uint64, p *byte, n, w int, key, lastKey, mergeKey, seqDst, idDst *uint64, flipLo, flipHi uint64) {
	if useAVX512 && w <= 256 {
		hashBlocks256AVX512(dst, p, n, w, key, lastKey, mergeKey, seqDst, idDst, flipLo, flipHi)
		return
	}
	if idDst != nil {
		panic("kvhash: prefix ids from hashBlocksAVX2")
	}
	hashBlocksAVX2(dst, p, n, w, key, lastKey, mergeKey, seqDst, flipLo, flipHi)
}

// cpuid returns the CPUID registers of leaf eax, subleaf ecx.
func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

// xgetbv returns XCR0, the state components the OS saves.
func xgetbv() (eax, edx uint32)

// useAVX2 reports whether the CPU has AVX2 and the OS saves the YMM
// registers (XCR0 bits 1 and 2). A variable so that tests can take the
// xxh3.HashSeed path too.
var useAVX2 = func() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, c1, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if c1&osxsave == 0 || c1&avx == 0 {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 {
		return false
	}
	_, b7, _, _ := cpuid(7, 0)
	const avx2 = 1 << 5
	return b7&avx2 != 0
}()

// useAVX512 reports whether the CPU has AVX-512F and the OS saves the
// opmask and ZMM registers too (XCR0 bits 5 to 7). A variable, as useAVX2.
//
// Measured (BenchmarkLocalSeq512, 512 blocks of 64 tokens, pinned to one
// CPU of the shared 2-core machine, kernels alternated): local hashes
// alone take 0.45-0.6 of the AVX2 time; with the sequence chain, ~0.85:
// the chain's 13-cycle step is then what bounds the loop. Measured on an
// AMD core only: on Intel cores before Ice Lake, 512-bit multiplies lower
// the core's clock for a while after them.
var useAVX512 = func() bool {
	if !useAVX2 {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&0xe6 != 0xe6 {
		return false
	}
	_, b7, _, _ := cpuid(7, 0)
	const avx512f = 1 << 16
	return b7&avx512f != 0
}()
