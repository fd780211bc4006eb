//go:build !purego

#include "textflag.h"

DATA q3consts<>+0(SB)/4, $0x7fffffff // magnitude mask
DATA q3consts<>+4(SB)/4, $0x4a7fffff // the largest float32 below 2^22
DATA q3consts<>+8(SB)/4, $-4
DATA q3consts<>+12(SB)/4, $3
DATA q3consts<>+16(SB)/4, $4
DATA q3consts<>+20(SB)/4, $0x01010101 // 1 in every byte
DATA q3consts<>+24(SB)/4, $0x03030303 // 3 in every byte
GLOBL q3consts<>(SB), RODATA|NOPTR, $28

// func q3PackAVX2(y *byte, x *float32, d *[16]float32, L *[256]int8) bool
//
// The end of quantize_row_q3_K_ref / _impl: for each group of 16 whose d
// is not 0, the levels MIN(3, MAX(-4, nearest_int(x/d))) + 4 into L (the
// groups with d = 0 keep theirs); then the high bits of the 256 levels
// into hmask (y[0:32], bit k of byte m for value 32k+m) and their low two
// bits into qs (y[32:96], four values 32 apart per byte). It returns false,
// having written nothing to y, when some x/d is not below 2^22 in
// magnitude (where VCVTPS2DQ's rounding is not nearest_int's).
TEXT ·q3PackAVX2(SB), NOSPLIT, $0-33
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         d+16(FP), DX
	MOVQ         L+24(FP), R8
	VBROADCASTSS q3consts<>+0(SB), Y15
	VPBROADCASTD q3consts<>+4(SB), Y14
	VPBROADCASTD q3consts<>+8(SB), Y13
	VPBROADCASTD q3consts<>+12(SB), Y12
	VPBROADCASTD q3consts<>+16(SB), Y11
	XORQ         CX, CX

q3group:
	VMOVSS   (DX)(CX*4), X10
	VXORPS   X9, X9, X9
	VUCOMISS X9, X10
	JPS      q3nan // a NaN d (unordered) is not 0
	JEQ      q3next

q3nan:
	VBROADCASTSS X10, Y10
	MOVQ     CX, AX
	SHLQ     $6, AX
	VMOVUPS  (SI)(AX*1), Y0
	VMOVUPS  32(SI)(AX*1), Y1
	VDIVPS   Y10, Y0, Y0
	VDIVPS   Y10, Y1, Y1
	VPAND    Y15, Y0, Y2
	VPAND    Y15, Y1, Y3
	VPCMPGTD Y14, Y2, Y2
	VPCMPGTD Y14, Y3, Y3
	VPOR     Y3, Y2, Y2
	VPTEST   Y2, Y2
	JNZ      q3fail
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VPMAXSD  Y13, Y0, Y0
	VPMAXSD  Y13, Y1, Y1
	VPMINSD  Y12, Y0, Y0
	VPMINSD  Y12, Y1, Y1
	VPADDD   Y11, Y0, Y0
	VPADDD   Y11, Y1, Y1
	VPACKSSDW Y1, Y0, Y0
	VPERMQ   $0xd8, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPACKSSWB X1, X0, X0
	MOVQ     CX, AX
	SHLQ     $4, AX
	VMOVDQU  X0, (R8)(AX*1)

q3next:
	INCQ CX
	CMPQ CX, $16
	JLT  q3group

	// hmask and qs.
	VPBROADCASTD q3consts<>+20(SB), Y14
	VPBROADCASTD q3consts<>+24(SB), Y13
	VPXOR        Y12, Y12, Y12
	VMOVDQU      (R8), Y0
	VMOVDQU      32(R8), Y1
	VMOVDQU      64(R8), Y2
	VMOVDQU      96(R8), Y3
	VMOVDQU      128(R8), Y4
	VMOVDQU      160(R8), Y5
	VMOVDQU      192(R8), Y6
	VMOVDQU      224(R8), Y7

#define HIGHBIT(r, k) \
	VPSRLW $2, r, Y8;   \
	VPAND  Y14, Y8, Y8; \
	VPSLLW $k, Y8, Y8;  \
	VPOR   Y8, Y12, Y12; \
	VPAND  Y13, r, r

	HIGHBIT(Y0, 0)
	HIGHBIT(Y1, 1)
	HIGHBIT(Y2, 2)
	HIGHBIT(Y3, 3)
	HIGHBIT(Y4, 4)
	HIGHBIT(Y5, 5)
	HIGHBIT(Y6, 6)
	HIGHBIT(Y7, 7)
	VMOVDQU Y12, (DI)

	VPSLLW  $2, Y1, Y1
	VPSLLW  $4, Y2, Y2
	VPSLLW  $6, Y3, Y3
	VPOR    Y1, Y0, Y0
	VPOR    Y3, Y2, Y2
	VPOR    Y2, Y0, Y0
	VMOVDQU Y0, 32(DI)
	VPSLLW  $2, Y5, Y5
	VPSLLW  $4, Y6, Y6
	VPSLLW  $6, Y7, Y7
	VPOR    Y5, Y4, Y4
	VPOR    Y7, Y6, Y6
	VPOR    Y6, Y4, Y4
	VMOVDQU Y4, 64(DI)
	MOVB    $1, ret+32(FP)
	VZEROUPPER
	RET

q3fail:
	MOVB $0, ret+32(FP)
	VZEROUPPER
	RET
