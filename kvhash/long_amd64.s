//go:build amd64 && !purego

#include "textflag.h"

// STRIPE folds the stripe at (p) keyed by (k) into Y0 (lanes 0..3) and
// Y1 (lanes 4..7): lane i adds its input word to lane i^1 (VPSHUFD $0x4e
// swaps the two words of each 128-bit half) and lo32(w^k) * hi32(w^k) to
// itself.
#define STRIPE(p, k) \
	VMOVDQU  (p), Y2       \
	VMOVDQU  32(p), Y3     \
	VPXOR    (k), Y2, Y4   \
	VPXOR    32(k), Y3, Y5 \
	VPSRLQ   $32, Y4, Y6   \
	VPSRLQ   $32, Y5, Y7   \
	VPMULUDQ Y4, Y6, Y6    \
	VPMULUDQ Y5, Y7, Y7    \
	VPSHUFD  $0x4e, Y2, Y2 \
	VPSHUFD  $0x4e, Y3, Y3 \
	VPADDQ   Y2, Y0, Y0    \
	VPADDQ   Y3, Y1, Y1    \
	VPADDQ   Y6, Y0, Y0    \
	VPADDQ   Y7, Y1, Y1

// XXH3's initial accumulators.
DATA accInit<>+0(SB)/8, $0x00000000C2B2AE3D
DATA accInit<>+8(SB)/8, $0x9E3779B185EBCA87
DATA accInit<>+16(SB)/8, $0xC2B2AE3D27D4EB4F
DATA accInit<>+24(SB)/8, $0x165667B19E3779F9
DATA accInit<>+32(SB)/8, $0x85EBCA77C2B2AE63
DATA accInit<>+40(SB)/8, $0x0000000085EBCA77
DATA accInit<>+48(SB)/8, $0x27D4EB2F165667C5
DATA accInit<>+56(SB)/8, $0x000000009E3779B1
GLOBL accInit<>(SB), RODATA|NOPTR, $64

// MERGE2 adds mulFold of the two words of X to R13 (AX, CX, DX clobbered).
#define MERGE2(x) \
	VMOVQ   x, AX       \
	VPEXTRQ $1, x, CX   \
	MULQ    CX          \
	XORQ    DX, AX      \
	ADDQ    AX, R13

// AVALANCHE is XXH3's final mix of r (AX, CX clobbered).
#define AVALANCHE(r) \
	MOVQ  r, AX                  \
	SHRQ  $37, AX                \
	XORQ  AX, r                  \
	MOVQ  $0x165667919E3779F9, AX \
	IMULQ AX, r                  \
	MOVQ  r, AX                  \
	SHRQ  $32, AX                \
	XORQ  AX, r

// SEQSTEP stores at (R10) the sequence hash of the local hash at src
// after the one whose value xor flipLo is in R11 (seqNext: XXH3-64 of
// the two 8-byte words), leaves the new hash xor flipLo in R11 and
// advances R10 (AX, CX, DX, R12 clobbered). The terms that need no
// product are summed beside the multiply and the next step's xor with
// flipLo beside the last shift, so that the serial chain is multiply,
// xor, add, avalanche and one xor (13 cycles, not 17).
#define SEQSTEP(src) \
	MOVQ   src, CX               \
	XORQ   flipHi+72(FP), CX     \
	MOVQ   R11, R12              \
	BSWAPQ R12                   \
	ADDQ   CX, R12               \
	ADDQ   $16, R12              \
	MOVQ   R11, AX               \
	MULQ   CX                    \
	XORQ   DX, AX                \
	ADDQ   R12, AX               \
	MOVQ   AX, R12               \
	SHRQ   $37, AX               \
	XORQ   AX, R12               \
	MOVQ   $0x165667919E3779F9, AX \
	IMULQ  AX, R12               \
	MOVQ   R12, AX               \
	SHRQ   $32, AX               \
	MOVQ   R12, R11              \
	XORQ   flipLo+64(FP), R11    \
	XORQ   AX, R11               \
	XORQ   AX, R12               \
	MOVQ   R12, (R10)            \
	ADDQ   $8, R10

// func hashBlocksAVX2(dst *uint64, p *byte, n, w int, key, lastKey, mergeKey, seqDst *uint64, flipLo, flipHi uint64)
//
// For each of the n blocks of w bytes from p (240 < w <= 1024: no
// scramble), accumulates its (w-1)/64 whole stripes and its last stripe,
// merges, avalanches, and stores the hash at dst. With seqDst not nil it
// also stores the sequence-hash chain of those hashes there (seqNext
// inline, flipLo and flipHi its keys): the chain is serial, and beside
// the next block's hashing its latency costs nothing.
TEXT ·hashBlocksAVX2(SB), NOSPLIT, $0-80
	MOVQ  dst+0(FP), DI
	MOVQ  p+8(FP), SI
	MOVQ  n+16(FP), BX
	MOVQ  w+24(FP), R8
	MOVQ  key+32(FP), R9
	MOVQ  seqDst+56(FP), R10
	TESTQ BX, BX
	JZ    blocksDone

block:
	VMOVDQU accInit<>+0(SB), Y0
	VMOVDQU accInit<>+32(SB), Y1
	MOVQ    SI, R12
	MOVQ    R9, DX
	LEAQ    -1(R8), CX
	SHRQ    $6, CX         // whole stripes
	TESTQ   CX, CX
	JZ      lastStripe

stripes:
	STRIPE(R12, DX)
	ADDQ $64, R12
	ADDQ $8, DX
	DECQ CX
	JNZ  stripes

lastStripe:
	LEAQ         -64(SI)(R8*1), R12
	MOVQ         lastKey+40(FP), CX
	STRIPE(R12, CX)
	MOVQ         mergeKey+48(FP), CX
	VPXOR        (CX), Y0, Y0
	VPXOR        32(CX), Y1, Y1
	MOVQ         $0x9E3779B185EBCA87, R13
	IMULQ        R8, R13   // w * prime64_1
	MERGE2(X0)
	VEXTRACTI128 $1, Y0, X2
	MERGE2(X2)
	MERGE2(X1)
	VEXTRACTI128 $1, Y1, X2
	MERGE2(X2)
	AVALANCHE(R13)
	MOVQ         R13, (DI)
	ADDQ         $8, DI
	ADDQ         R8, SI

	// The sequence hash: the local hash itself for the first block, else
	// XXH3-64 of LE64(previous) || LE64(local) under the default seed
	// (SEQSTEP). A block's step runs one block late, after the next
	// block's hashing: its local hash is then long done, so the step
	// waits only on the step before it and leaves the window free for
	// the hashing instead of holding it while the block's hash finishes.
	TESTQ R10, R10
	JZ    next
	MOVQ  n+16(FP), R12
	CMPQ  BX, R12
	JEQ   seqFirst
	DECQ  R12
	CMPQ  BX, R12
	JEQ   next    // the second block: its step runs in the next one
	SEQSTEP(-16(DI))
	JMP   next

seqFirst:
	MOVQ R13, R11
	XORQ flipLo+64(FP), R11
	MOVQ R13, (R10)
	ADDQ $8, R10

next:
	DECQ BX
	JNZ  block

	// The last block's step (none for a single block).
	TESTQ R10, R10
	JZ    blocksDone
	CMPQ  n+16(FP), $2
	JLT   blocksDone
	SEQSTEP(-8(DI))

blocksDone:
	VZEROUPPER
	RET

// func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eaxArg+0(FP), AX
	MOVL ecxArg+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv() (eax, edx uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET
