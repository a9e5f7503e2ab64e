//go:build amd64 && !purego

#include "textflag.h"

// hashBlocks256AVX512 is hashBlocksAVX2 (long_amd64.s) for blocks of 241
// to 256 bytes (61 to 64 tokens: three whole stripes and the last), in
// AVX-512: one ZMM register holds the eight accumulators, a stripe is one
// load, the stripes are unrolled, the keys stay in registers, and the
// first two blocks' sequence steps are peeled off the loop. A block costs
// ~90 instructions against ~150.

// XXH3's initial accumulators (as accInit in long_amd64.s: DATA symbols
// are file-local).
DATA accInit512<>+0(SB)/8, $0x00000000C2B2AE3D
DATA accInit512<>+8(SB)/8, $0x9E3779B185EBCA87
DATA accInit512<>+16(SB)/8, $0xC2B2AE3D27D4EB4F
DATA accInit512<>+24(SB)/8, $0x165667B19E3779F9
DATA accInit512<>+32(SB)/8, $0x85EBCA77C2B2AE63
DATA accInit512<>+40(SB)/8, $0x0000000085EBCA77
DATA accInit512<>+48(SB)/8, $0x27D4EB2F165667C5
DATA accInit512<>+56(SB)/8, $0x000000009E3779B1
GLOBL accInit512<>(SB), RODATA|NOPTR, $64

// STRIPE512 folds the stripe at p keyed by k (a register) into Z0 from
// acc: lane i adds its input word to lane i^1 and lo32(w^k) * hi32(w^k)
// to itself.
#define STRIPE512(p, k, acc) \
	VMOVDQU64 p, Z2         \
	VPXORQ    k, Z2, Z4     \
	VPSRLQ    $32, Z4, Z6   \
	VPMULUDQ  Z4, Z6, Z6    \
	VPSHUFD   $0x4e, Z2, Z2 \
	VPADDQ    Z2, acc, Z0   \
	VPADDQ    Z6, Z0, Z0

// MERGE2X adds mulFold of the two words of x to R13 (AX, CX, DX clobbered).
#define MERGE2X(x) \
	VMOVQ   x, AX     \
	VPEXTRQ $1, x, CX \
	MULQ    CX        \
	XORQ    DX, AX    \
	ADDQ    AX, R13

// BLOCK256 hashes the block at SI into R13, stores it at DI and advances
// SI and DI (AX, CX, DX, Z0, Z2, Z4, Z6, X7 clobbered).
#define BLOCK256 \
	STRIPE512((SI), Z12, Z10)            \
	STRIPE512(64(SI), Z13, Z0)           \
	STRIPE512(128(SI), Z14, Z0)          \
	STRIPE512(-64(SI)(R8*1), Z8, Z0)     \
	VPXORQ        Z9, Z0, Z0             \
	VMOVQ         X11, R13               \
	MERGE2X(X0)                          \
	VEXTRACTI64X2 $1, Z0, X7             \
	MERGE2X(X7)                          \
	VEXTRACTI64X2 $2, Z0, X7             \
	MERGE2X(X7)                          \
	VEXTRACTI64X2 $3, Z0, X7             \
	MERGE2X(X7)                          \
	MOVQ          R13, AX                \
	SHRQ          $37, AX                \
	XORQ          AX, R13                \
	MOVQ          $0x165667919E3779F9, AX \
	IMULQ         AX, R13                \
	MOVQ          R13, AX                \
	SHRQ          $32, AX                \
	XORQ          AX, R13                \
	MOVQ          R13, (DI)              \
	ADDQ          $8, DI                 \
	ADDQ          R8, SI

// SEQSTEP512 is long_amd64.s's SEQSTEP: the sequence hash of the local
// hash at src after the chain in R11 (xor flipLo), stored at (R10).
#define SEQSTEP512(src) \
	MOVQ   src, CX               \
	XORQ   flipHi+80(FP), CX     \
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
	XORQ   flipLo+72(FP), R11    \
	XORQ   AX, R11               \
	XORQ   AX, R12               \
	MOVQ   R12, (R10)            \
	ADDQ   $8, R10

// The prefix-id multipliers (kvhash.PrefixK1, PrefixK2).
DATA pidK<>+0(SB)/8, $0x9e3779b97f4a7c15
DATA pidK<>+8(SB)/8, $0xbf58476d1ce4e5b9
GLOBL pidK<>(SB), RODATA|NOPTR, $16

// IDSTEP stores at (R9) the prefix id of the local hash at src after the
// one in R14 (PrefixNext), leaves it in R14 and advances R9 (AX
// clobbered). Its chain (xor, multiply, shift, xor: 6 cycles) runs beside
// the sequence step's 13.
#define IDSTEP(src) \
	MOVQ  src, AX            \
	IMULQ pidK<>+0(SB), AX   \
	XORQ  AX, R14            \
	IMULQ pidK<>+8(SB), R14  \
	MOVQ  R14, AX            \
	SHRQ  $32, AX            \
	XORQ  AX, R14            \
	MOVQ  R14, (R9)          \
	ADDQ  $8, R9

// func hashBlocks256AVX512(dst *uint64, p *byte, n, w int, key, lastKey, mergeKey, seqDst, idDst *uint64, flipLo, flipHi uint64)
TEXT ·hashBlocks256AVX512(SB), NOSPLIT, $0-88
	MOVQ      dst+0(FP), DI
	MOVQ      p+8(FP), SI
	MOVQ      n+16(FP), BX
	MOVQ      w+24(FP), R8
	MOVQ      key+32(FP), R9
	MOVQ      seqDst+56(FP), R10
	TESTQ     BX, BX
	JZ        done
	// The keys of the stripes, the last stripe and the merge, the
	// initial accumulators and the merge's start (w * prime64_1): once
	// per call.
	VMOVDQU64 (R9), Z12
	VMOVDQU64 8(R9), Z13
	VMOVDQU64 16(R9), Z14
	MOVQ      lastKey+40(FP), AX
	VMOVDQU64 (AX), Z8
	MOVQ      mergeKey+48(FP), AX
	VMOVDQU64 (AX), Z9
	VMOVDQU64 accInit512<>+0(SB), Z10
	MOVQ      $0x9E3779B185EBCA87, AX
	IMULQ     R8, AX
	VMOVQ     AX, X11
	MOVQ      idDst+64(FP), R9
	TESTQ     R10, R10
	JZ        noChain
	TESTQ     R9, R9
	JNZ       withIDs

	// With the chain: the first block's sequence hash is its local hash,
	// the second's step runs after the third block, and so on (one block
	// late, as in hashBlocksAVX2); the last step after the loop.
	BLOCK256
	MOVQ R13, R11
	XORQ flipLo+72(FP), R11
	MOVQ R13, (R10)
	ADDQ $8, R10
	DECQ BX
	JZ   done
	BLOCK256
	DECQ BX
	JZ   lastStep

seqLoop:
	BLOCK256
	SEQSTEP512(-16(DI))
	DECQ BX
	JNZ  seqLoop

lastStep:
	SEQSTEP512(-8(DI))
	JMP done

noChain:
	TESTQ R9, R9
	JNZ   idsOnly

plain:
	BLOCK256
	DECQ BX
	JNZ  plain
	JMP  done

	// The prefix ids without the sequence chain: a block's id step right
	// after it (its 6-cycle chain is shorter than a block's hashing).
idsOnly:
	BLOCK256
	MOVQ R13, R14
	MOVQ R13, (R9)
	ADDQ $8, R9
	DECQ BX
	JZ   done

idsOnlyLoop:
	BLOCK256
	IDSTEP(R13)
	DECQ BX
	JNZ  idsOnlyLoop
	JMP  done

	// The chain and the prefix ids: as above, the id chain beside.
withIDs:
	BLOCK256
	MOVQ R13, R11
	XORQ flipLo+72(FP), R11
	MOVQ R13, (R10)
	ADDQ $8, R10
	MOVQ R13, R14
	MOVQ R13, (R9)
	ADDQ $8, R9
	DECQ BX
	JZ   done
	BLOCK256
	DECQ BX
	JZ   lastStepIDs

idLoop:
	BLOCK256
	SEQSTEP512(-16(DI))
	IDSTEP(-16(DI))
	DECQ BX
	JNZ  idLoop

lastStepIDs:
	SEQSTEP512(-8(DI))
	IDSTEP(-8(DI))

done:
	VZEROUPPER
	RET
