//go:build amd64 && !purego

#include "textflag.h"

// STRIPE folds the stripe at (SI) keyed by (DX) into Y0 (lanes 0..3) and
// Y1 (lanes 4..7): lane i adds its input word to lane i^1 (VPSHUFD $0x4e
// swaps the two words of each 128-bit half) and lo32(w^k) * hi32(w^k) to
// itself.
#define STRIPE \
	VMOVDQU  (SI), Y2      \
	VMOVDQU  32(SI), Y3    \
	VPXOR    (DX), Y2, Y4  \
	VPXOR    32(DX), Y3, Y5 \
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

// func accumAVX2(acc *[8]uint64, p *byte, n int, key *uint64, last *byte, lastKey *uint64)
TEXT ·accumAVX2(SB), NOSPLIT, $0-48
	MOVQ    acc+0(FP), AX
	MOVQ    p+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVQ    key+24(FP), DX
	VMOVDQU (AX), Y0
	VMOVDQU 32(AX), Y1
	TESTQ   CX, CX
	JZ      tail

loop:
	STRIPE
	ADDQ $64, SI
	ADDQ $8, DX
	DECQ CX
	JNZ  loop

tail:
	MOVQ  last+32(FP), SI
	TESTQ SI, SI
	JZ    done
	MOVQ  lastKey+40(FP), DX
	STRIPE

done:
	VMOVDQU Y0, (AX)
	VMOVDQU Y1, 32(AX)
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
