#include "textflag.h"

// func expandAddAVX512(out *int32, words int, cur *expCursor, nd int)
// For each bitmap word i of words: out[64i..64i+63] = the sum over the
// nd cursors of w times the column's values of those 64 slots, where a
// cursor's bits word i says which slots hold a value and its vals pointer
// the next value (VPEXPANDB spreads them to their slots; the pointer
// advances by the word's popcount).
TEXT ·expandAddAVX512(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ words+8(FP), CX
	MOVQ cur+16(FP), SI
	MOVQ nd+24(FP), DX
	XORQ R8, R8

word:
	CMPQ R8, CX
	JGE  done
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ   SI, R9
	MOVQ   DX, R10

dim:
	TESTQ R10, R10
	JZ    store
	MOVQ  0(R9), R11
	MOVQ  (R11)(R8*8), R12
	TESTQ R12, R12
	JZ    next
	MOVQ  8(R9), R13
	KMOVQ R12, K1
	VPXORD Z4, Z4, Z4
	VPEXPANDB (R13), K1, Z4
	POPCNTQ R12, R12
	ADDQ  R12, R13
	MOVQ  R13, 8(R9)
	VPBROADCASTD 16(R9), Z5
	VPMOVSXBD X4, Z6
	VPMULLD   Z5, Z6, Z6
	VPADDD    Z6, Z0, Z0
	VEXTRACTI32X4 $1, Z4, X7
	VPMOVSXBD X7, Z6
	VPMULLD   Z5, Z6, Z6
	VPADDD    Z6, Z1, Z1
	VEXTRACTI32X4 $2, Z4, X7
	VPMOVSXBD X7, Z6
	VPMULLD   Z5, Z6, Z6
	VPADDD    Z6, Z2, Z2
	VEXTRACTI32X4 $3, Z4, X7
	VPMOVSXBD X7, Z6
	VPMULLD   Z5, Z6, Z6
	VPADDD    Z6, Z3, Z3

next:
	ADDQ $24, R9
	DECQ R10
	JMP  dim

store:
	MOVQ      R8, R11
	SHLQ      $8, R11
	VMOVDQU32 Z0, (DI)(R11*1)
	VMOVDQU32 Z1, 64(DI)(R11*1)
	VMOVDQU32 Z2, 128(DI)(R11*1)
	VMOVDQU32 Z3, 192(DI)(R11*1)
	INCQ      R8
	JMP       word

done:
	VZEROUPPER
	RET
