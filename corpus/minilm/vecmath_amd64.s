#include "textflag.h"

// func expShiftAVX512(x *float32, n int, c *[16]float32, sum *[16]float32)
// x[i] = exp(x[i] - c[0]) for i < n (a multiple of 16), each result added
// to its lane of sum. c holds max, log2e, ln2hi, ln2lo, then the Taylor
// coefficients 1/5040, 1/720, 1/120, 1/24, 1/6, 1/2, 1. e^r for |r| <= ln2/2
// by the polynomial, times 2^n with VSCALEFPS (which underflows to 0).
TEXT ·expShiftAVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ c+16(FP), DX
	MOVQ sum+24(FP), DI
	VBROADCASTSS 0(DX), Z20
	VBROADCASTSS 4(DX), Z21
	VBROADCASTSS 8(DX), Z22
	VBROADCASTSS 12(DX), Z23
	VBROADCASTSS 16(DX), Z24
	VBROADCASTSS 20(DX), Z25
	VBROADCASTSS 24(DX), Z26
	VBROADCASTSS 28(DX), Z27
	VBROADCASTSS 32(DX), Z28
	VBROADCASTSS 36(DX), Z29
	VBROADCASTSS 40(DX), Z30
	VMOVUPS 0(DI), Z19
	SHRQ $4, CX
	JZ expdone
exploop:
	VMOVUPS (SI), Z0
	VSUBPS Z20, Z0, Z0
	VMULPS Z21, Z0, Z1
	VRNDSCALEPS $0, Z1, Z1
	VFNMADD231PS Z22, Z1, Z0
	VFNMADD231PS Z23, Z1, Z0
	VMOVAPS Z24, Z2
	VFMADD213PS Z25, Z0, Z2
	VFMADD213PS Z26, Z0, Z2
	VFMADD213PS Z27, Z0, Z2
	VFMADD213PS Z28, Z0, Z2
	VFMADD213PS Z29, Z0, Z2
	VFMADD213PS Z30, Z0, Z2
	VFMADD213PS Z30, Z0, Z2
	VSCALEFPS Z1, Z2, Z2
	VMOVUPS Z2, (SI)
	VADDPS Z2, Z19, Z19
	ADDQ $64, SI
	DECQ CX
	JNZ exploop
expdone:
	VMOVUPS Z19, 0(DI)
	VZEROUPPER
	RET

// func geluAVX512(x *float32, n int, c *[16]float32)
// x[i] = x[i]/2 * (1 + erf(x[i]/sqrt2)) for i < n (a multiple of 16), erf
// by the rational approximation of erff: c holds 1/sqrt2, 4, -4, then the
// numerator's coefficients a13..a1 (7), the denominator's b8..b0 (5).
TEXT ·geluAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ c+16(FP), DX
	VBROADCASTSS 0(DX), Z16
	VBROADCASTSS 4(DX), Z17
	VBROADCASTSS 8(DX), Z18
	VBROADCASTSS 12(DX), Z19
	VBROADCASTSS 16(DX), Z20
	VBROADCASTSS 20(DX), Z21
	VBROADCASTSS 24(DX), Z22
	VBROADCASTSS 28(DX), Z23
	VBROADCASTSS 32(DX), Z24
	VBROADCASTSS 36(DX), Z25
	VBROADCASTSS 40(DX), Z26
	VBROADCASTSS 44(DX), Z27
	VBROADCASTSS 48(DX), Z28
	VBROADCASTSS 52(DX), Z29
	VBROADCASTSS 56(DX), Z30
	VBROADCASTSS 60(DX), Z31
	SHRQ $4, CX
	JZ geludone
geluloop:
	VMOVUPS (SI), Z0
	VMULPS Z16, Z0, Z1
	VMINPS Z17, Z1, Z1
	VMAXPS Z18, Z1, Z1
	VMULPS Z1, Z1, Z2
	VMOVAPS Z19, Z3
	VFMADD213PS Z20, Z2, Z3
	VFMADD213PS Z21, Z2, Z3
	VFMADD213PS Z22, Z2, Z3
	VFMADD213PS Z23, Z2, Z3
	VFMADD213PS Z24, Z2, Z3
	VFMADD213PS Z25, Z2, Z3
	VMULPS Z1, Z3, Z3
	VMOVAPS Z26, Z4
	VFMADD213PS Z27, Z2, Z4
	VFMADD213PS Z28, Z2, Z4
	VFMADD213PS Z29, Z2, Z4
	VFMADD213PS Z30, Z2, Z4
	VDIVPS Z4, Z3, Z3
	VMULPS Z31, Z0, Z5
	VFMADD213PS Z5, Z5, Z3
	VMOVUPS Z3, (SI)
	ADDQ $64, SI
	DECQ CX
	JNZ geluloop
geludone:
	VZEROUPPER
	RET

// func maxAVX512(x *float32, n int, out *[16]float32)
// out[l] = max of x[l], x[l+16], ... for i < n (a multiple of 16, > 0).
TEXT ·maxAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ out+16(FP), DI
	VMOVUPS (SI), Z0
	ADDQ $64, SI
	SHRQ $4, CX
	DECQ CX
	JZ maxdone
maxloop:
	VMAXPS (SI), Z0, Z0
	ADDQ $64, SI
	DECQ CX
	JNZ maxloop
maxdone:
	VMOVUPS Z0, 0(DI)
	VZEROUPPER
	RET

// func expShiftAVX2(x *float32, n int, c *[16][8]float32, sum *[8]float32)
// expShiftAVX512 for AVX2+FMA, 8 lanes: c holds each constant broadcast to
// 8 lanes: max, -87.3 (x is clamped there, so 2^n stays normal), log2e,
// ln2hi, ln2lo, 1/5040, 1/720, 1/120, 1/24, 1/6, 1/2, 1, then int32 127.
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ c+16(FP), DX
	MOVQ sum+24(FP), DI
	VMOVUPS 0(DX), Y4
	VMOVUPS 32(DX), Y5
	VMOVUPS 64(DX), Y6
	VMOVUPS 96(DX), Y7
	VMOVUPS 128(DX), Y8
	VMOVUPS 352(DX), Y9
	VMOVUPS 384(DX), Y10
	VMOVUPS (DI), Y3
	SHRQ $3, CX
	JZ exp2done
exp2loop:
	VMOVUPS (SI), Y0
	VSUBPS Y4, Y0, Y0
	VMAXPS Y5, Y0, Y0
	VMULPS Y6, Y0, Y1
	VROUNDPS $0, Y1, Y1
	VFNMADD231PS Y7, Y1, Y0
	VFNMADD231PS Y8, Y1, Y0
	VMOVUPS 160(DX), Y2
	VFMADD213PS 192(DX), Y0, Y2
	VFMADD213PS 224(DX), Y0, Y2
	VFMADD213PS 256(DX), Y0, Y2
	VFMADD213PS 288(DX), Y0, Y2
	VFMADD213PS 320(DX), Y0, Y2
	VFMADD213PS Y9, Y0, Y2
	VFMADD213PS Y9, Y0, Y2
	VCVTPS2DQ Y1, Y1
	VPADDD Y10, Y1, Y1
	VPSLLD $23, Y1, Y1
	VMULPS Y1, Y2, Y2
	VMOVUPS Y2, (SI)
	VADDPS Y2, Y3, Y3
	ADDQ $32, SI
	DECQ CX
	JNZ exp2loop
exp2done:
	VMOVUPS Y3, (DI)
	VZEROUPPER
	RET

// func geluAVX2(x *float32, n int, c *[16][8]float32)
// geluAVX512 for AVX2+FMA, 8 lanes, with geluConsts broadcast to 8 lanes.
TEXT ·geluAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ c+16(FP), DX
	VMOVUPS 0(DX), Y8
	VMOVUPS 32(DX), Y9
	VMOVUPS 64(DX), Y10
	VMOVUPS 480(DX), Y11
	SHRQ $3, CX
	JZ gelu2done
gelu2loop:
	VMOVUPS (SI), Y0
	VMULPS Y8, Y0, Y1
	VMINPS Y9, Y1, Y1
	VMAXPS Y10, Y1, Y1
	VMULPS Y1, Y1, Y2
	VMOVUPS 96(DX), Y3
	VFMADD213PS 128(DX), Y2, Y3
	VFMADD213PS 160(DX), Y2, Y3
	VFMADD213PS 192(DX), Y2, Y3
	VFMADD213PS 224(DX), Y2, Y3
	VFMADD213PS 256(DX), Y2, Y3
	VFMADD213PS 288(DX), Y2, Y3
	VMULPS Y1, Y3, Y3
	VMOVUPS 320(DX), Y4
	VFMADD213PS 352(DX), Y2, Y4
	VFMADD213PS 384(DX), Y2, Y4
	VFMADD213PS 416(DX), Y2, Y4
	VFMADD213PS 448(DX), Y2, Y4
	VDIVPS Y4, Y3, Y3
	VMULPS Y11, Y0, Y5
	VFMADD213PS Y5, Y5, Y3
	VMOVUPS Y3, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ gelu2loop
gelu2done:
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int, out *[8]float32)
// maxAVX512 for AVX, 8 lanes (n a multiple of 8, > 0).
TEXT ·maxAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ out+16(FP), DI
	VMOVUPS (SI), Y0
	ADDQ $32, SI
	SHRQ $3, CX
	DECQ CX
	JZ max2done
max2loop:
	VMAXPS (SI), Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ max2loop
max2done:
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET

// func minMaxAVX512(x *float32, n int, out *[32]float32)
// out[l] = min and out[16+l] = max of x[l], x[l+16], ... and 0 (n a
// multiple of 16, > 0).
TEXT ·minMaxAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ out+16(FP), DI
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	SHRQ $4, CX
mmloop:
	VMOVUPS (SI), Z2
	VMINPS Z2, Z0, Z0
	VMAXPS Z2, Z1, Z1
	ADDQ $64, SI
	DECQ CX
	JNZ mmloop
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VZEROUPPER
	RET

// func quantAVX512(x *float32, n int, q *uint8, inv float32, zp float32)
// q[i] = clamp(roundeven(x[i]*inv + zp), 0, 255) (n a multiple of 16, > 0;
// the product and the sum each rounded to float32, as quantRowGo does).
TEXT ·quantAVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ q+16(FP), DI
	VBROADCASTSS inv+24(FP), Z1
	VBROADCASTSS zp+28(FP), Z2
	VPXORD Z3, Z3, Z3
	MOVL $255, AX
	VPBROADCASTD AX, Z4
	SHRQ $4, CX
qloop:
	VMULPS (SI), Z1, Z0
	VADDPS Z2, Z0, Z0
	VCVTPS2DQ Z0, Z0
	VPMAXSD Z3, Z0, Z0
	VPMINSD Z4, Z0, Z0
	VPMOVDB Z0, (DI)
	ADDQ $64, SI
	ADDQ $16, DI
	DECQ CX
	JNZ qloop
	VZEROUPPER
	RET
