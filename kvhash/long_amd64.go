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
