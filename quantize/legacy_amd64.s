//go:build !purego

#include "textflag.h"

DATA q4perm<>+0(SB)/4, $0
DATA q4perm<>+4(SB)/4, $4
DATA q4perm<>+8(SB)/4, $1
DATA q4perm<>+12(SB)/4, $5
DATA q4perm<>+16(SB)/4, $2
DATA q4perm<>+20(SB)/4, $6
DATA q4perm<>+24(SB)/4, $3
DATA q4perm<>+28(SB)/4, $7
GLOBL q4perm<>(SB), RODATA|NOPTR, $32

DATA qconsts<>+0(SB)/4, $0x7fffffff  // magnitude mask
DATA qconsts<>+4(SB)/4, $0x7f800000  // exponent bits
DATA qconsts<>+8(SB)/4, $0x3f800000  // 1
DATA qconsts<>+12(SB)/4, $0x000000ff // low byte
DATA qconsts<>+16(SB)/4, $0x0f0f0f0f // 15 in every byte
DATA qconsts<>+20(SB)/4, $0x1f1f1f1f // 31 in every byte
DATA qconsts<>+24(SB)/4, $0xc1000000 // -8
DATA qconsts<>+28(SB)/4, $0x41080000 // 8.5
DATA qconsts<>+32(SB)/4, $0xc1800000 // -16
DATA qconsts<>+36(SB)/4, $0x41840000 // 16.5
DATA qconsts<>+40(SB)/4, $0x41700000 // 15
DATA qconsts<>+44(SB)/4, $0x41f80000 // 31
DATA qconsts<>+48(SB)/4, $0x3f000000 // 0.5
GLOBL qconsts<>(SB), RODATA|NOPTR, $52

// Constants held by every kernel below.
#define QSETUP \
	VBROADCASTSS qconsts<>+0(SB), Y15;  \
	VBROADCASTSS qconsts<>+4(SB), Y14;  \
	VBROADCASTSS qconsts<>+12(SB), Y13; \
	VBROADCASTSS qconsts<>+16(SB), Y12; \
	VMOVDQU      q4perm<>(SB), Y11

// LOADBLOCK loads the block of 32 at SI into Y0-Y3.
#define LOADBLOCK \
	VMOVUPS (SI), Y0;   \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3

// TOBYTES truncates Y0-Y3 to int32 as C's cast does (INT32_MIN for NaN and
// out-of-range values) and leaves their low bytes, values 0..31 in order,
// in Y0.
#define TOBYTES \
	VCVTTPS2DQ Y0, Y0;     \
	VCVTTPS2DQ Y1, Y1;     \
	VCVTTPS2DQ Y2, Y2;     \
	VCVTTPS2DQ Y3, Y3;     \
	VPAND      Y13, Y0, Y0; \
	VPAND      Y13, Y1, Y1; \
	VPAND      Y13, Y2, Y2; \
	VPAND      Y13, Y3, Y3; \
	VPACKUSDW  Y1, Y0, Y0;  \
	VPACKUSDW  Y3, Y2, Y2;  \
	VPACKUSWB  Y2, Y0, Y0;  \
	VPERMD     Y0, Y11, Y0

// NIBBLES stores at dst the levels 0..15 in Y0 as 16 bytes, value j in the
// low and value j+16 in the high nibble of byte j.
#define NIBBLES(dst) \
	VEXTRACTI128 $1, Y0, X1; \
	VPSLLW       $4, X1, X1; \
	VPOR         X1, X0, X0; \
	VMOVDQU      X0, dst

// QH5 stores at dst bit 4 of each of the 32 levels in Y0 (qh of Q5_0 and
// Q5_1), then keeps their low nibbles in Y0.
#define QH5(dst) \
	VPSLLW    $3, Y0, Y1; \
	VPMOVMSKB Y1, AX;     \
	MOVL      AX, dst;    \
	VPAND     Y12, Y0, Y0

// HALF stores the float32 in X register src as an fp16 at dst (VCVTPS2PH,
// ggml's rounding for finite values); clobbers X7 and AX.
#define HALF(src, dst) \
	VCVTPS2PH $0, src, X7; \
	VMOVD     X7, AX;      \
	MOVW      AX, dst

// SCALEINV sets X10 to 1/d for the scale d in X9, or 0 when d is 0.
#define SCALEINV \
	VXORPS   X10, X10, X10;     \
	VUCOMISS X10, X9;           \
	JEQ      3(PC);             \
	VMOVSS   qconsts<>+8(SB), X10; \
	VDIVSS   X9, X10, X10

// qabsmax sets X10 to the value of largest magnitude of the block in Y0-Y3
// (at SI), the first one on ties, compared as integer bits (+0 when all
// are zeros), and AX to its magnitude bits, at least 0x7F800000 when the
// block holds a NaN or an infinity. Clobbers Y4-Y9, R8-R11.
TEXT qabsmax<>(SB), NOSPLIT, $0
	VPAND        Y15, Y0, Y4
	VPAND        Y15, Y1, Y5
	VPAND        Y15, Y2, Y6
	VPAND        Y15, Y3, Y7
	VPMAXUD      Y5, Y4, Y8
	VPMAXUD      Y7, Y6, Y9
	VPMAXUD      Y9, Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPMAXUD      X9, X8, X8
	VPSHUFD      $0x4e, X8, X9
	VPMAXUD      X9, X8, X8
	VPSHUFD      $0xb1, X8, X9
	VPMAXUD      X9, X8, X8
	VMOVD        X8, AX
	VXORPS       X10, X10, X10
	TESTL        AX, AX
	JZ           absdone
	CMPL         AX, $0x7f800000
	JAE          absdone
	VPBROADCASTD X8, Y8
	VPCMPEQD     Y8, Y4, Y4
	VPCMPEQD     Y8, Y5, Y5
	VPCMPEQD     Y8, Y6, Y6
	VPCMPEQD     Y8, Y7, Y7
	CALL         qfirst<>(SB)
	VMOVSS       (SI)(R8*4), X10

absdone:
	RET

// qfirst sets R8 to the index of the first set lane of the masks Y4-Y7
// (values 0-7, 8-15, 16-23, 24-31), one of which is set. Clobbers R9-R11.
TEXT qfirst<>(SB), NOSPLIT, $0
	VMOVMSKPS Y4, R8
	VMOVMSKPS Y5, R9
	VMOVMSKPS Y6, R10
	VMOVMSKPS Y7, R11
	SHLL      $8, R9
	SHLL      $16, R10
	SHLL      $24, R11
	ORL       R9, R8
	ORL       R10, R8
	ORL       R11, R8
	BSFL      R8, R8
	RET

// qminmax sets X8 and X9 to the min and max of the block in Y0-Y3 (at SI)
// as ggml's `if (v < min) min = v` from ±FLT_MAX finds them: where one is
// a zero, the block's first zero with its sign. AX is non-zero when the
// block holds a NaN or an infinity (X8, X9 are then not to be used).
// Clobbers Y4-Y7, R8-R11.
TEXT qminmax<>(SB), NOSPLIT, $0
	VPAND        Y14, Y0, Y4
	VPAND        Y14, Y1, Y5
	VPAND        Y14, Y2, Y6
	VPAND        Y14, Y3, Y7
	VPCMPEQD     Y14, Y4, Y4
	VPCMPEQD     Y14, Y5, Y5
	VPCMPEQD     Y14, Y6, Y6
	VPCMPEQD     Y14, Y7, Y7
	VPOR         Y5, Y4, Y4
	VPOR         Y7, Y6, Y6
	VPOR         Y6, Y4, Y4
	VPMOVMSKB    Y4, AX
	TESTL        AX, AX
	JNZ          mmdone
	VMINPS       Y1, Y0, Y4
	VMINPS       Y3, Y2, Y5
	VMINPS       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMINPS       X5, X4, X4
	VPERMILPS    $0x4e, X4, X5
	VMINPS       X5, X4, X4
	VPERMILPS    $0xb1, X4, X5
	VMINPS       X5, X4, X8
	VMAXPS       Y1, Y0, Y4
	VMAXPS       Y3, Y2, Y5
	VMAXPS       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS       X5, X4, X4
	VPERMILPS    $0x4e, X4, X5
	VMAXPS       X5, X4, X4
	VPERMILPS    $0xb1, X4, X5
	VMAXPS       X5, X4, X9
	VXORPS       X7, X7, X7
	VUCOMISS     X7, X8
	JNE          mmmaxz
	CALL         qfirstzero<>(SB)
	VMOVSS       (SI)(R8*4), X8

mmmaxz:
	VXORPS   X7, X7, X7
	VUCOMISS X7, X9
	JNE      mmok
	CALL     qfirstzero<>(SB)
	VMOVSS   (SI)(R8*4), X9

mmok:
	XORL AX, AX

mmdone:
	RET

// qfirstzero sets R8 to the index of the first zero of the block in Y0-Y3,
// which holds one. Clobbers Y4-Y7, R9-R11.
TEXT qfirstzero<>(SB), NOSPLIT, $0
	VXORPS Y7, Y7, Y7
	VCMPPS $0, Y7, Y0, Y4
	VCMPPS $0, Y7, Y1, Y5
	VCMPPS $0, Y7, Y2, Y6
	VCMPPS $0, Y7, Y3, Y7
	CALL   qfirst<>(SB)
	RET

// func q4_0RefAVX2(dst *byte, src *float32, nblocks int) int
//
// quantize_row_q4_0_ref on nblocks blocks of 32: max from qabsmax, d =
// max/-8, id = 1/d (0 when d is 0), then MIN(15, (int8_t)(x·id + 8.5f))
// with the product and the sum rounded apart: VCVTTPS2DQ truncates as C's
// cast and gives INT32_MIN, low byte 0, where ggml's x·id is infinite or
// NaN. It returns the number of blocks written, stopping at the first
// block holding a NaN or an infinity.
TEXT ·q4_0RefAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nblocks+16(FP), CX
	XORQ BX, BX
	QSETUP

q40block:
	CMPQ BX, CX
	JGE  q40done
	LOADBLOCK
	CALL qabsmax<>(SB)
	CMPL AX, $0x7f800000
	JAE  q40done
	VDIVSS qconsts<>+24(SB), X10, X9 // d = max / -8
	SCALEINV
	HALF(X9, (DI))
	VBROADCASTSS X10, Y10
	VBROADCASTSS qconsts<>+28(SB), Y9
	VMULPS Y10, Y0, Y0
	VMULPS Y10, Y1, Y1
	VMULPS Y10, Y2, Y2
	VMULPS Y10, Y3, Y3
	VADDPS Y9, Y0, Y0
	VADDPS Y9, Y1, Y1
	VADDPS Y9, Y2, Y2
	VADDPS Y9, Y3, Y3
	TOBYTES
	VPMINUB Y12, Y0, Y0 // MIN(15, ·)
	NIBBLES(2(DI))
	ADDQ $128, SI
	ADDQ $18, DI
	INCQ BX
	JMP  q40block

q40done:
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET

// func q5_0RefAVX2(dst *byte, src *float32, nblocks int) int
//
// quantize_row_q5_0_ref as q4_0RefAVX2 does Q4_0: d = max/-16, levels
// MIN(31, (int8_t)(x·id + 16.5f)), bit 4 of each in qh.
TEXT ·q5_0RefAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nblocks+16(FP), CX
	XORQ BX, BX
	QSETUP

q50block:
	CMPQ BX, CX
	JGE  q50done
	LOADBLOCK
	CALL qabsmax<>(SB)
	CMPL AX, $0x7f800000
	JAE  q50done
	VDIVSS qconsts<>+32(SB), X10, X9 // d = max / -16
	SCALEINV
	HALF(X9, (DI))
	VBROADCASTSS X10, Y10
	VBROADCASTSS qconsts<>+36(SB), Y9
	VMULPS Y10, Y0, Y0
	VMULPS Y10, Y1, Y1
	VMULPS Y10, Y2, Y2
	VMULPS Y10, Y3, Y3
	VADDPS Y9, Y0, Y0
	VADDPS Y9, Y1, Y1
	VADDPS Y9, Y2, Y2
	VADDPS Y9, Y3, Y3
	TOBYTES
	VBROADCASTSS qconsts<>+20(SB), Y9
	VPMINUB Y9, Y0, Y0 // MIN(31, ·)
	QH5(2(DI))
	NIBBLES(6(DI))
	ADDQ $128, SI
	ADDQ $22, DI
	INCQ BX
	JMP  q50block

q50done:
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET

// func q4_1RefAVX2(dst *byte, src *float32, nblocks int) int
//
// quantize_row_q4_1_ref on nblocks blocks of 32: min and max from qminmax,
// d = (max - min)/15, id = 1/d (0 when d is 0), then MIN(15, (int8_t)((x -
// min)·id + 0.5f)) as in q4_0RefAVX2. It returns the number of blocks
// written, stopping at the first block holding a NaN or an infinity.
TEXT ·q4_1RefAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nblocks+16(FP), CX
	XORQ BX, BX
	QSETUP

q41block:
	CMPQ  BX, CX
	JGE   q41done
	LOADBLOCK
	CALL  qminmax<>(SB)
	TESTL AX, AX
	JNZ   q41done
	VSUBSS X8, X9, X9                // max - min
	VDIVSS qconsts<>+40(SB), X9, X9  // d
	SCALEINV
	HALF(X9, (DI))
	HALF(X8, 2(DI))
	CALL  qlevels1<>(SB)
	VPMINUB Y12, Y0, Y0 // MIN(15, ·)
	NIBBLES(4(DI))
	ADDQ $128, SI
	ADDQ $20, DI
	INCQ BX
	JMP  q41block

q41done:
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET

// func q5_1RefAVX2(dst *byte, src *float32, nblocks int) int
//
// quantize_row_q5_1_ref as q4_1RefAVX2 does Q4_1: d = (max - min)/31,
// levels (uint8_t)((x - min)·id + 0.5f) without a clamp, bit 4 of each in
// qh.
TEXT ·q5_1RefAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nblocks+16(FP), CX
	XORQ BX, BX
	QSETUP

q51block:
	CMPQ  BX, CX
	JGE   q51done
	LOADBLOCK
	CALL  qminmax<>(SB)
	TESTL AX, AX
	JNZ   q51done
	VSUBSS X8, X9, X9                // max - min
	VDIVSS qconsts<>+44(SB), X9, X9  // d
	SCALEINV
	HALF(X9, (DI))
	HALF(X8, 2(DI))
	CALL  qlevels1<>(SB)
	QH5(4(DI))
	NIBBLES(8(DI))
	ADDQ $128, SI
	ADDQ $24, DI
	INCQ BX
	JMP  q51block

q51done:
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET

// qlevels1 leaves in Y0 the low bytes of the truncations of (x - min)·id +
// 0.5 for the block in Y0-Y3, min in X8 and id in X10 (Q4_1 and Q5_1).
// Clobbers Y1-Y3, Y8-Y10.
TEXT qlevels1<>(SB), NOSPLIT, $0
	VBROADCASTSS X8, Y8
	VBROADCASTSS X10, Y10
	VBROADCASTSS qconsts<>+48(SB), Y9
	VSUBPS Y8, Y0, Y0
	VSUBPS Y8, Y1, Y1
	VSUBPS Y8, Y2, Y2
	VSUBPS Y8, Y3, Y3
	VMULPS Y10, Y0, Y0
	VMULPS Y10, Y1, Y1
	VMULPS Y10, Y2, Y2
	VMULPS Y10, Y3, Y3
	VADDPS Y9, Y0, Y0
	VADDPS Y9, Y1, Y1
	VADDPS Y9, Y2, Y2
	VADDPS Y9, Y3, Y3
	TOBYTES
	RET
