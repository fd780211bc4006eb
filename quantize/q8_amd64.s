//go:build !purego

#include "textflag.h"
#include "quant_amd64.h"

DATA q8consts<>+0(SB)/4, $0x7fffffff // magnitude mask
DATA q8consts<>+4(SB)/4, $127        // MIN(127, ·)
DATA q8consts<>+8(SB)/4, $0xc2fe0000 // -127
DATA q8consts<>+12(SB)/4, $0x3f800000 // 1
GLOBL q8consts<>(SB), RODATA|NOPTR, $16

PACKPERM

// AMAX8 folds the magnitudes of the 8 vectors at R8 into Y0-Y3.
#define AMAX8 \
	VPAND   (R8), Y15, Y4;    \
	VPMAXUD Y4, Y0, Y0;       \
	VPAND   32(R8), Y15, Y5;  \
	VPMAXUD Y5, Y1, Y1;       \
	VPAND   64(R8), Y15, Y6;  \
	VPMAXUD Y6, Y2, Y2;       \
	VPAND   96(R8), Y15, Y7;  \
	VPMAXUD Y7, Y3, Y3;       \
	VPAND   128(R8), Y15, Y4; \
	VPMAXUD Y4, Y0, Y0;       \
	VPAND   160(R8), Y15, Y5; \
	VPMAXUD Y5, Y1, Y1;       \
	VPAND   192(R8), Y15, Y6; \
	VPMAXUD Y6, Y2, Y2;       \
	VPAND   224(R8), Y15, Y7; \
	VPMAXUD Y7, Y3, Y3

// LEVEL sets r to MIN(127, nearest_int(iscale·x)) for the 8 values at
// off(SI), iscale in Y9: VCVTPS2DQ rounds to nearest even (the MXCSR
// default), nearest_int's result while |iscale·x| < 2^22, which holds as
// |x| is at most the block maximum.
#define LEVEL(off, r) \
	VMULPS    off(SI), Y9, r; \
	VCVTPS2DQ r, r;           \
	VPMINSD   Y13, r, r

// PACK8 stores the int32 levels in a-d (values 0-31) as 32 int8 at dst.
#define PACK8(a, b, c, d, dst) \
	VPACKSSDW b, a, Y8;   \
	VPACKSSDW d, c, Y10;  \
	VPACKSSWB Y10, Y8, Y8; \
	VPERMD    Y8, Y11, Y8; \
	VMOVDQU   Y8, dst

// CHUNK quantizes the 64 values at SI into 64(DI)... as qs[0:64] at (DI)
// and their four sums of 16 as int16 at (R10).
#define CHUNK \
	LEVEL(0, Y0);                \
	LEVEL(32, Y1);               \
	LEVEL(64, Y2);               \
	LEVEL(96, Y3);               \
	LEVEL(128, Y4);              \
	LEVEL(160, Y5);              \
	LEVEL(192, Y6);              \
	LEVEL(224, Y7);              \
	PACK8(Y0, Y1, Y2, Y3, (DI)); \
	PACK8(Y4, Y5, Y6, Y7, 32(DI)); \
	VPADDD       Y1, Y0, Y0;     \
	VPADDD       Y3, Y2, Y2;     \
	VPADDD       Y5, Y4, Y4;     \
	VPADDD       Y7, Y6, Y6;     \
	VPHADDD      Y2, Y0, Y0;     \
	VPHADDD      Y6, Y4, Y4;     \
	VPHADDD      Y4, Y0, Y0;     \
	VEXTRACTI128 $1, Y0, X1;     \
	VPADDD       X1, X0, X0;     \
	VPACKSSDW    X0, X0, X0;     \
	VMOVQ        X0, (R10)

// func q8KAVX2(dst *byte, src *float32, nblocks int) int
//
// quantize_row_q8_K_ref on nblocks blocks of 256: the value of largest
// magnitude (the first on ties) max, iscale = -127/max, the levels
// MIN(127, nearest_int(iscale·x)), the sums of each 16 levels, d =
// 1/iscale. It returns the number of blocks done, stopping before a block
// whose largest magnitude is below 2^-100 (zero included: iscale could
// overflow there; the Go form encodes it) or is a NaN or an infinity.
TEXT ·q8KAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), R12
	MOVQ         src+8(FP), R13
	MOVQ         nblocks+16(FP), CX
	XORQ         BX, BX
	VBROADCASTSS q8consts<>+0(SB), Y15
	VPBROADCASTD q8consts<>+4(SB), Y13
	VMOVDQU      packperm<>(SB), Y11

q8kblock:
	CMPQ  BX, CX
	JGE   q8kdone
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	MOVQ  R13, R8
	AMAX8
	ADDQ  $256, R8
	AMAX8
	ADDQ  $256, R8
	AMAX8
	ADDQ  $256, R8
	AMAX8
	HMAXUD4
	CMPL         AX, $0x0d800000
	JB           q8kdone
	CMPL         AX, $0x7f800000
	JAE          q8kdone

	// The first value with that magnitude.
	VPBROADCASTD X0, Y8
	MOVQ         R13, R9

q8kfirst:
	VPAND     (R9), Y15, Y4
	VPCMPEQD  Y8, Y4, Y4
	VMOVMSKPS Y4, R8
	TESTL     R8, R8
	JNZ       q8kfound
	ADDQ      $32, R9
	JMP       q8kfirst

q8kfound:
	BSFL   R8, R8
	VMOVSS (R9)(R8*4), X10
	VMOVSS q8consts<>+8(SB), X9
	VDIVSS X10, X9, X9 // iscale = -127/max
	VMOVSS q8consts<>+12(SB), X12
	VDIVSS X9, X12, X12 // d = 1/iscale
	VMOVSS X12, (R12)
	VBROADCASTSS X9, Y9

	MOVQ R13, SI
	LEAQ 4(R12), DI
	LEAQ 260(R12), R10
	CHUNK
	ADDQ $256, SI
	ADDQ $64, DI
	ADDQ $8, R10
	CHUNK
	ADDQ $256, SI
	ADDQ $64, DI
	ADDQ $8, R10
	CHUNK
	ADDQ $256, SI
	ADDQ $64, DI
	ADDQ $8, R10
	CHUNK

	ADDQ $1024, R13
	ADDQ $292, R12
	INCQ BX
	JMP  q8kblock

q8kdone:
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET

DATA q81consts<>+0(SB)/4, $0x42fe0000 // 127
DATA q81consts<>+4(SB)/4, $0x80000000 // sign bit
DATA q81consts<>+8(SB)/4, $0x3effffff // 0.49999997
GLOBL q81consts<>(SB), RODATA|NOPTR, $12

DATA ttone<>+0(SB)/4, $1
GLOBL ttone<>(SB), RODATA|NOPTR, $4

// ROUNDF sets r to roundf(r·id) as int32, id in Y10: trunc(t +
// copysign(0.49999997, t)), exact for |t| < 2^22 (see roundHalfAway).
#define ROUNDF(r) \
	VMULPS     Y10, r, r;  \
	VPAND      Y14, r, Y4; \
	VPOR       Y13, Y4, Y4; \
	VADDPS     Y4, r, r;   \
	VCVTTPS2DQ r, r

// func q8x32AVX2(dst *byte, src *float32, nblocks int, q81 bool) int
//
// quantize_row_q8_0_ref (q81 false: blocks {d, qs[32]} of 34 bytes) or
// quantize_row_q8_1_ref (q81 true: blocks {d, s, qs[32]} of 36 bytes) on
// nblocks blocks of 32: d = amax/127, id = 1/d, the levels roundf(x·id),
// and for Q8_1 s = d·(their sum). It returns the number of blocks done,
// stopping before a block whose largest magnitude is below 2^-100 (zero
// included: 1/d could overflow there; the Go form encodes it) or is a NaN
// or an infinity.
TEXT ·q8x32AVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         nblocks+16(FP), CX
	MOVBLZX      q81+24(FP), DX
	MOVQ         $2, R9  // offset of qs
	MOVQ         $34, R10 // block size
	TESTL        DX, DX
	JZ           q8x32start
	MOVQ         $4, R9
	MOVQ         $36, R10

q8x32start:
	XORQ         BX, BX
	VBROADCASTSS q8consts<>+0(SB), Y15
	VBROADCASTSS q81consts<>+4(SB), Y14
	VBROADCASTSS q81consts<>+8(SB), Y13
	VMOVDQU      packperm<>(SB), Y11

q8x32block:
	CMPQ         BX, CX
	JGE          q8x32done
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VMOVUPS      64(SI), Y2
	VMOVUPS      96(SI), Y3
	VPAND        Y15, Y0, Y4
	VPAND        Y15, Y1, Y5
	VPAND        Y15, Y2, Y6
	VPAND        Y15, Y3, Y7
	VPMAXUD      Y5, Y4, Y4
	VPMAXUD      Y7, Y6, Y6
	VPMAXUD      Y6, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXUD      X5, X4, X4
	VPSHUFD      $0x4e, X4, X5
	VPMAXUD      X5, X4, X4
	VPSHUFD      $0xb1, X4, X5
	VPMAXUD      X5, X4, X8
	VMOVD        X8, AX
	CMPL         AX, $0x0d800000
	JB           q8x32done
	CMPL         AX, $0x7f800000
	JAE          q8x32done
	VDIVSS       q81consts<>+0(SB), X8, X9 // d = amax/127
	VMOVSS       q8consts<>+12(SB), X10
	VDIVSS       X9, X10, X10              // id = 1/d
	VCVTPS2PH    $0, X9, X7
	VMOVD        X7, AX
	MOVW         AX, (DI)
	VBROADCASTSS X10, Y10
	ROUNDF(Y0)
	ROUNDF(Y1)
	ROUNDF(Y2)
	ROUNDF(Y3)
	LEAQ         (DI)(R9*1), R11
	PACK8(Y0, Y1, Y2, Y3, (R11))
	TESTL        DX, DX
	JZ           q8x32next
	VPADDD       Y1, Y0, Y0
	VPADDD       Y3, Y2, Y2
	VPADDD       Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPADDD       X1, X0, X0
	VCVTDQ2PS    X0, X0
	VMULSS       X9, X0, X0 // d·sum
	VCVTPS2PH    $0, X0, X7
	VMOVD        X7, AX
	MOVW         AX, 2(DI)

q8x32next:
	ADDQ         $128, SI
	ADDQ         R10, DI
	INCQ         BX
	JMP          q8x32block

q8x32done:
	MOVQ BX, ret+32(FP)
	VZEROUPPER
	RET

// func ternaryTritsAVX2(t *byte, x *float32) (d float32, ok bool)
//
// ternaryTrits on a block of 256 finite values: d = amax, id = 1/d, t[j] =
// lroundf(x[j]·id) + 1 (0, 1 or 2; lroundf as trunc(t + copysign(
// 0.49999997, t)), exact as |x·id| <= 1). It reports false, having written
// nothing, when amax is below 2^-100 (zero included: 1/d could overflow)
// or not finite.
TEXT ·ternaryTritsAVX2(SB), NOSPLIT, $0-21
	MOVQ         t+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS q8consts<>+0(SB), Y15
	VPXOR        Y0, Y0, Y0
	VPXOR        Y1, Y1, Y1
	VPXOR        Y2, Y2, Y2
	VPXOR        Y3, Y3, Y3
	MOVQ         SI, R8
	AMAX8
	ADDQ         $256, R8
	AMAX8
	ADDQ         $256, R8
	AMAX8
	ADDQ         $256, R8
	AMAX8
	HMAXUD4
	CMPL         AX, $0x0d800000
	JB           ttfail
	CMPL         AX, $0x7f800000
	JAE          ttfail
	VMOVSS       X0, d+16(FP)
	VMOVSS       q8consts<>+12(SB), X10
	VDIVSS       X0, X10, X10 // id = 1/d
	VBROADCASTSS X10, Y10
	VBROADCASTSS q81consts<>+4(SB), Y14
	VBROADCASTSS q81consts<>+8(SB), Y13
	VPBROADCASTD ttone<>(SB), Y12
	VMOVDQU      packperm<>(SB), Y11
	MOVQ         $8, CX

ttloop:
	VMOVUPS   (SI), Y0
	VMOVUPS   32(SI), Y1
	VMOVUPS   64(SI), Y2
	VMOVUPS   96(SI), Y3
	ROUNDF(Y0)
	ROUNDF(Y1)
	ROUNDF(Y2)
	ROUNDF(Y3)
	VPADDD    Y12, Y0, Y0
	VPADDD    Y12, Y1, Y1
	VPADDD    Y12, Y2, Y2
	VPADDD    Y12, Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD    Y0, Y11, Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $128, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       ttloop
	MOVB      $1, ok+20(FP)
	VZEROUPPER
	RET

ttfail:
	MOVB $0, ok+20(FP)
	VZEROUPPER
	RET
