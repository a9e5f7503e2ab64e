//go:build amd64 && !purego

#include "textflag.h"

// func prefetchSlots(slots *uint64, homes *uint64, n int)
TEXT ·prefetchSlots(SB), NOSPLIT, $0-24
	MOVQ slots+0(FP), DI
	MOVQ homes+8(FP), SI
	MOVQ n+16(FP), CX
	TESTQ CX, CX
	JLE  done
loop:
	MOVQ (SI), AX
	PREFETCHT0 (DI)(AX*8)
	ADDQ $8, SI
	DECQ CX
	JNZ  loop
done:
	RET

