#include "textflag.h"

// func dotInt8AVX2(a, b *int8, n int) int32
// n is a multiple of 16: each int8 is sign-extended to int16
// (VPMOVSXBW), pairs are multiplied and summed into int32 (VPMADDWD).
TEXT ·dotInt8AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y3, Y3, Y3

loop32:
	CMPQ CX, $32
	JL   tail16
	VPMOVSXBW (SI), Y1
	VPMOVSXBW (DI), Y2
	VPMADDWD  Y1, Y2, Y1
	VPADDD    Y1, Y0, Y0
	VPMOVSXBW 16(SI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMADDWD  Y4, Y5, Y4
	VPADDD    Y4, Y3, Y3
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $32, CX
	JMP       loop32

tail16:
	CMPQ CX, $16
	JL   done
	VPMOVSXBW (SI), Y1
	VPMOVSXBW (DI), Y2
	VPMADDWD  Y1, Y2, Y1
	VPADDD    Y1, Y0, Y0

done:
	VPADDD       Y3, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	VZEROUPPER
	MOVL         AX, ret+24(FP)
	RET

// func dotRowsVNNI(q, rows *int8, dim, n int, out *int32)
// out[i] = Σ (rows[i*dim+j] XOR 0x80) * q[j] over each of n rows: each
// signed row byte is made unsigned by adding 128 (the XOR) and multiplied
// with the signed query byte by VPDPBUSD, four products a lane summed
// into int32 (no saturation); the caller subtracts 128 * Σ q. dim is a
// multiple of 64.
TEXT ·dotRowsVNNI(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ rows+8(FP), DI
	MOVQ dim+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), R8
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z31

row:
	TESTQ CX, CX
	JZ    done
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	MOVQ   SI, R9
	MOVQ   DX, R10

pair:
	CMPQ      R10, $128
	JL        single
	VPXORQ    (DI), Z31, Z2
	VPXORQ    64(DI), Z31, Z3
	VMOVDQU64 (R9), Z4
	VMOVDQU64 64(R9), Z5
	VPDPBUSD  Z4, Z2, Z0
	VPDPBUSD  Z5, Z3, Z1
	ADDQ      $128, DI
	ADDQ      $128, R9
	SUBQ      $128, R10
	JMP       pair

single:
	CMPQ      R10, $64
	JL        reduce
	VPXORQ    (DI), Z31, Z2
	VMOVDQU64 (R9), Z4
	VPDPBUSD  Z4, Z2, Z0
	ADDQ      $64, DI

reduce:
	VPADDD        Z1, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD        Y1, Y0, Y0
	VEXTRACTI128  $1, Y0, X1
	VPADDD        X1, X0, X0
	VPSHUFD       $0x4E, X0, X1
	VPADDD        X1, X0, X0
	VPSHUFD       $0xB1, X0, X1
	VPADDD        X1, X0, X0
	VMOVD         X0, AX
	MOVL          AX, (R8)
	ADDQ          $4, R8
	DECQ          CX
	JMP           row

done:
	VZEROUPPER
	RET
