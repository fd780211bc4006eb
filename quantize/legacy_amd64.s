//go:build !purego

#include "textflag.h"

DATA q40perm<>+0(SB)/4, $0
DATA q40perm<>+4(SB)/4, $4
DATA q40perm<>+8(SB)/4, $1
DATA q40perm<>+12(SB)/4, $5
DATA q40perm<>+16(SB)/4, $2
DATA q40perm<>+20(SB)/4, $6
DATA q40perm<>+24(SB)/4, $3
DATA q40perm<>+28(SB)/4, $7
GLOBL q40perm<>(SB), RODATA|NOPTR, $32

DATA q40consts<>+0(SB)/4, $0x7fffffff  // magnitude mask
DATA q40consts<>+4(SB)/4, $0xc1000000  // -8
DATA q40consts<>+8(SB)/4, $0x3f800000  // 1
DATA q40consts<>+12(SB)/4, $0x41080000 // 8.5
DATA q40consts<>+16(SB)/4, $0x000000ff // low byte
DATA q40consts<>+20(SB)/4, $0x0f0f0f0f // 15 in every byte
GLOBL q40consts<>(SB), RODATA|NOPTR, $24

// func q4_0RefAVX2(dst *byte, src *float32, nblocks int) int
//
// quantize_row_q4_0_ref on nblocks blocks of 32: max is the value of
// largest magnitude, the first one on ties (magnitudes compared as integer
// bits, +0 when all are zeros), d = max/-8, id = 1/d (0 when d is 0), then
// MIN(15, (int8_t)(x·id + 8.5f)) with the product and the sum rounded
// apart: VCVTTPS2DQ truncates as C's cast and gives INT32_MIN, low byte 0,
// where ggml's x·id is infinite or NaN. It returns the number of blocks
// written, stopping at the first block holding a NaN or an infinity.
TEXT ·q4_0RefAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         nblocks+16(FP), CX
	XORQ         BX, BX
	VBROADCASTSS q40consts<>+0(SB), Y15
	VBROADCASTSS q40consts<>+12(SB), Y14
	VBROADCASTSS q40consts<>+16(SB), Y13
	VBROADCASTSS q40consts<>+20(SB), Y12
	VMOVDQU      q40perm<>(SB), Y11

q40block:
	CMPQ    BX, CX
	JGE     q40done
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VPAND   Y15, Y0, Y4
	VPAND   Y15, Y1, Y5
	VPAND   Y15, Y2, Y6
	VPAND   Y15, Y3, Y7
	VPMAXUD Y5, Y4, Y8
	VPMAXUD Y7, Y6, Y9
	VPMAXUD Y9, Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPMAXUD X9, X8, X8
	VPSHUFD $0x4e, X8, X9
	VPMAXUD X9, X8, X8
	VPSHUFD $0xb1, X8, X9
	VPMAXUD X9, X8, X8    // amax bits in every lane
	VMOVD   X8, AX
	CMPL    AX, $0x7f800000
	JAE     q40done
	VXORPS  X10, X10, X10 // max = +0 when every value is a zero
	TESTL   AX, AX
	JZ      q40scale
	VPBROADCASTD X8, Y8
	VPCMPEQD  Y8, Y4, Y4
	VPCMPEQD  Y8, Y5, Y5
	VPCMPEQD  Y8, Y6, Y6
	VPCMPEQD  Y8, Y7, Y7
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
	VMOVSS    (SI)(R8*4), X10

q40scale:
	VDIVSS    q40consts<>+4(SB), X10, X10 // d = max / -8
	VXORPS    X9, X9, X9                  // id = 0
	VUCOMISS  X9, X10
	JEQ       q40store
	VMOVSS    q40consts<>+8(SB), X9
	VDIVSS    X10, X9, X9                 // id = 1/d

q40store:
	VCVTPS2PH $0, X10, X10
	VMOVD     X10, AX
	MOVW      AX, (DI)
	VBROADCASTSS X9, Y9
	VMULPS    Y9, Y0, Y0
	VMULPS    Y9, Y1, Y1
	VMULPS    Y9, Y2, Y2
	VMULPS    Y9, Y3, Y3
	VADDPS    Y14, Y0, Y0
	VADDPS    Y14, Y1, Y1
	VADDPS    Y14, Y2, Y2
	VADDPS    Y14, Y3, Y3
	VCVTTPS2DQ Y0, Y0
	VCVTTPS2DQ Y1, Y1
	VCVTTPS2DQ Y2, Y2
	VCVTTPS2DQ Y3, Y3
	VPAND     Y13, Y0, Y0
	VPAND     Y13, Y1, Y1
	VPAND     Y13, Y2, Y2
	VPAND     Y13, Y3, Y3
	VPACKUSDW Y1, Y0, Y0
	VPACKUSDW Y3, Y2, Y2
	VPACKUSWB Y2, Y0, Y0
	VPERMD    Y0, Y11, Y0         // values 0..31 in order
	VPMINUB   Y12, Y0, Y0         // MIN(15, ·)
	VEXTRACTI128 $1, Y0, X1
	VPSLLW    $4, X1, X1
	VPOR      X1, X0, X0
	VMOVDQU   X0, 2(DI)
	ADDQ      $128, SI
	ADDQ      $18, DI
	INCQ      BX
	JMP       q40block

q40done:
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET

DATA q41consts<>+0(SB)/4, $0x7f800000  // exponent bits
DATA q41consts<>+4(SB)/4, $0x41700000  // 15
DATA q41consts<>+8(SB)/4, $0x3f000000  // 0.5
GLOBL q41consts<>(SB), RODATA|NOPTR, $12

// func q4_1RefAVX2(dst *byte, src *float32, nblocks int) int
//
// quantize_row_q4_1_ref on nblocks blocks of 32: min and max of the block
// (as ggml's `if (v < min) min = v` from ±FLT_MAX: where the extreme is a
// zero, the first zero of the block, whose sign is stored with m), d =
// (max - min)/15, id = 1/d (0 when d is 0), then MIN(15, (int8_t)((x -
// min)·id + 0.5f)) as in q4_0RefAVX2. It returns the number of blocks
// written, stopping at the first block holding a NaN or an infinity.
TEXT ·q4_1RefAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         nblocks+16(FP), CX
	XORQ         BX, BX
	VBROADCASTSS q41consts<>+0(SB), Y15
	VBROADCASTSS q41consts<>+8(SB), Y14
	VBROADCASTSS q40consts<>+16(SB), Y13
	VBROADCASTSS q40consts<>+20(SB), Y12
	VMOVDQU      q40perm<>(SB), Y11

q41block:
	CMPQ     BX, CX
	JGE      q41done
	VMOVUPS  (SI), Y0
	VMOVUPS  32(SI), Y1
	VMOVUPS  64(SI), Y2
	VMOVUPS  96(SI), Y3
	VPAND    Y15, Y0, Y4
	VPAND    Y15, Y1, Y5
	VPAND    Y15, Y2, Y6
	VPAND    Y15, Y3, Y7
	VPCMPEQD Y15, Y4, Y4
	VPCMPEQD Y15, Y5, Y5
	VPCMPEQD Y15, Y6, Y6
	VPCMPEQD Y15, Y7, Y7
	VPOR     Y5, Y4, Y4
	VPOR     Y7, Y6, Y6
	VPOR     Y6, Y4, Y4
	VPTEST   Y4, Y4
	JNZ      q41done

	VMINPS       Y1, Y0, Y4
	VMINPS       Y3, Y2, Y5
	VMINPS       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMINPS       X5, X4, X4
	VPERMILPS    $0x4e, X4, X5
	VMINPS       X5, X4, X4
	VPERMILPS    $0xb1, X4, X5
	VMINPS       X5, X4, X8   // min, up to the sign of a zero
	VMAXPS       Y1, Y0, Y4
	VMAXPS       Y3, Y2, Y5
	VMAXPS       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS       X5, X4, X4
	VPERMILPS    $0x4e, X4, X5
	VMAXPS       X5, X4, X4
	VPERMILPS    $0xb1, X4, X5
	VMAXPS       X5, X4, X9   // max, up to the sign of a zero

	VXORPS   X10, X10, X10
	VUCOMISS X10, X8
	JNE      q41minok
	CALL     q41firstzero<>(SB)
	VMOVAPS  X7, X8

q41minok:
	VUCOMISS X10, X9
	JNE      q41maxok
	CALL     q41firstzero<>(SB)
	VMOVAPS  X7, X9

q41maxok:
	VSUBSS    X8, X9, X9                  // max - min
	VDIVSS    q41consts<>+4(SB), X9, X9   // d
	VXORPS    X10, X10, X10               // id = 0
	VUCOMISS  X10, X9
	JEQ       q41store
	VMOVSS    q40consts<>+8(SB), X10
	VDIVSS    X9, X10, X10                // id = 1/d

q41store:
	VCVTPS2PH $0, X9, X9
	VMOVD     X9, AX
	MOVW      AX, (DI)
	VCVTPS2PH $0, X8, X9
	VMOVD     X9, AX
	MOVW      AX, 2(DI)
	VBROADCASTSS X8, Y8
	VBROADCASTSS X10, Y10
	VSUBPS    Y8, Y0, Y0
	VSUBPS    Y8, Y1, Y1
	VSUBPS    Y8, Y2, Y2
	VSUBPS    Y8, Y3, Y3
	VMULPS    Y10, Y0, Y0
	VMULPS    Y10, Y1, Y1
	VMULPS    Y10, Y2, Y2
	VMULPS    Y10, Y3, Y3
	VADDPS    Y14, Y0, Y0
	VADDPS    Y14, Y1, Y1
	VADDPS    Y14, Y2, Y2
	VADDPS    Y14, Y3, Y3
	VCVTTPS2DQ Y0, Y0
	VCVTTPS2DQ Y1, Y1
	VCVTTPS2DQ Y2, Y2
	VCVTTPS2DQ Y3, Y3
	VPAND     Y13, Y0, Y0
	VPAND     Y13, Y1, Y1
	VPAND     Y13, Y2, Y2
	VPAND     Y13, Y3, Y3
	VPACKUSDW Y1, Y0, Y0
	VPACKUSDW Y3, Y2, Y2
	VPACKUSWB Y2, Y0, Y0
	VPERMD    Y0, Y11, Y0
	VPMINUB   Y12, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPSLLW    $4, X1, X1
	VPOR      X1, X0, X0
	VMOVDQU   X0, 4(DI)
	ADDQ      $128, SI
	ADDQ      $20, DI
	INCQ      BX
	JMP       q41block

q41done:
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET

// q41firstzero sets X7 to the first zero (with its sign) of the block in
// Y0-Y3, which holds one. Clobbers Y4-Y7 and R8-R11.
TEXT q41firstzero<>(SB), NOSPLIT, $0
	VXORPS    Y7, Y7, Y7
	VCMPPS    $0, Y7, Y0, Y4
	VCMPPS    $0, Y7, Y1, Y5
	VCMPPS    $0, Y7, Y2, Y6
	VCMPPS    $0, Y7, Y3, Y7
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
	VMOVSS    (SI)(R8*4), X7
	RET
