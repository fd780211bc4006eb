//go:build !purego

#include "textflag.h"
#include "quant_amd64.h"

DATA q1idx<>+0(SB)/4, $0
DATA q1idx<>+4(SB)/4, $128
DATA q1idx<>+8(SB)/4, $256
DATA q1idx<>+12(SB)/4, $384
DATA q1idx<>+16(SB)/4, $512
DATA q1idx<>+20(SB)/4, $640
DATA q1idx<>+24(SB)/4, $768
DATA q1idx<>+28(SB)/4, $896
GLOBL q1idx<>(SB), RODATA|NOPTR, $32

PACKPERM

DATA q1consts<>+0(SB)/4, $0x7fffffff // magnitude mask
DATA q1consts<>+4(SB)/4, $0x43000000 // 128
GLOBL q1consts<>(SB), RODATA|NOPTR, $8

// func q1_0x8AVX2(dst *byte, src *float32, n8 int)
//
// quantize_row_q1_0_ref on n8 runs of eight blocks of 128, block j of a run
// in lane j: each lane adds |x| over its block in ggml's index order (one
// VADDPS per value index, the values gathered from the eight blocks), d =
// sum/128 to fp16; then bit j of each code byte is x >= 0 (true for -0).
TEXT ·q1_0x8AVX2(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n8+16(FP), CX
	VBROADCASTSS q1consts<>+0(SB), Y15
	VMOVDQU      q1idx<>(SB), Y13
	VXORPS       Y12, Y12, Y12

q1run:
	TESTQ  CX, CX
	JZ     q1done
	VXORPS Y0, Y0, Y0
	MOVQ   SI, R8
	MOVQ   $128, R9

q1sum:
	VPCMPEQD   Y14, Y14, Y14
	VGATHERDPS Y14, (R8)(Y13*4), Y1
	VANDPS     Y15, Y1, Y1
	VADDPS     Y1, Y0, Y0
	ADDQ       $4, R8
	DECQ       R9
	JNZ        q1sum

	VBROADCASTSS q1consts<>+4(SB), Y1
	VDIVPS       Y1, Y0, Y0
	VCVTPS2PH    $0, Y0, X0
	VPEXTRW      $0, X0, AX
	MOVW         AX, (DI)
	VPEXTRW      $1, X0, AX
	MOVW         AX, 18(DI)
	VPEXTRW      $2, X0, AX
	MOVW         AX, 36(DI)
	VPEXTRW      $3, X0, AX
	MOVW         AX, 54(DI)
	VPEXTRW      $4, X0, AX
	MOVW         AX, 72(DI)
	VPEXTRW      $5, X0, AX
	MOVW         AX, 90(DI)
	VPEXTRW      $6, X0, AX
	MOVW         AX, 108(DI)
	VPEXTRW      $7, X0, AX
	MOVW         AX, 126(DI)

	// Sign bits: eight blocks of sixteen code bytes.
	MOVQ $8, R9

q1block:
	MOVQ $16, R10
	LEAQ 2(DI), R11

q1bits:
	VCMPPS    $0x12, (SI), Y12, Y1 // 0 <= x
	VMOVMSKPS Y1, AX
	MOVB      AX, (R11)
	ADDQ      $32, SI
	INCQ      R11
	DECQ      R10
	JNZ       q1bits
	ADDQ      $18, DI
	DECQ      R9
	JNZ       q1block
	DECQ      CX
	JMP       q1run

q1done:
	VZEROUPPER
	RET

DATA q2consts<>+0(SB)/4, $0x80000000 // sign bit
DATA q2consts<>+4(SB)/4, $0x3effffff // 0.49999997
DATA q2consts<>+8(SB)/4, $1
DATA q2consts<>+12(SB)/4, $3
DATA q2consts<>+16(SB)/4, $0x04010401 // bytes 1, 4
DATA q2consts<>+20(SB)/4, $0x00100001 // words 1, 16
DATA q2consts<>+24(SB)/4, $0x3f800000 // 1.0
GLOBL q2consts<>(SB), RODATA|NOPTR, $28

// Q2CODE sets r (8 values) to MAX(0, MIN(3, (int)roundf(x·id) + 1)), id in
// Y10: roundf as trunc(t + copysign(0.49999997, t)), exact for |t| < 2^22.
// Clobbers Y4.
#define Q2CODE(r) \
	VMULPS     Y10, r, r;   \
	VPAND      Y14, r, Y4;  \
	VPOR       Y13, Y4, Y4; \
	VADDPS     Y4, r, r;    \
	VCVTTPS2DQ r, r;        \
	VPADDD     Y12, r, r;   \
	VPMAXSD    Y9, r, r;    \
	VPMINSD    Y8, r, r

// Q2PACK sets a to the 8 code bytes of the 32 codes in a-d (int32, values
// 0-31 in order, byte k = c[4k] | c[4k+1]<<2 | c[4k+2]<<4 | c[4k+3]<<6) as
// the low bytes of its 8 dwords. Clobbers b-d.
#define Q2PACK(a, b, c, d) \
	VPACKSSDW  b, a, a;      \
	VPACKSSDW  d, c, c;      \
	VPACKSSWB  c, a, a;      \
	VPERMD     a, Y11, a;    \
	VPMADDUBSW Y7, a, a;     \
	VPMADDWD   Y6, a, a

// func q2_0AVX2(dst *byte, src *float32, nblocks int) int
//
// quantize_row_q2_0_ref on nblocks blocks of 64 finite values: d = amax,
// id = 1/d, codes (int)roundf(x·id) + 1 clamped to 0..3, four to a byte.
// It returns the number of blocks done, stopping before a block whose
// largest magnitude is below 2^-100 (zero included: 1/d could overflow; the
// Go form encodes it) or is not finite.
TEXT ·q2_0AVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         nblocks+16(FP), CX
	XORQ         BX, BX
	VBROADCASTSS q1consts<>+0(SB), Y15
	VBROADCASTSS q2consts<>+0(SB), Y14
	VBROADCASTSS q2consts<>+4(SB), Y13
	VPBROADCASTD q2consts<>+8(SB), Y12
	VMOVDQU      packperm<>(SB), Y11
	VPXOR        Y9, Y9, Y9
	VPBROADCASTD q2consts<>+12(SB), Y8
	VPBROADCASTD q2consts<>+16(SB), Y7
	VPBROADCASTD q2consts<>+20(SB), Y6

q2block:
	CMPQ         BX, CX
	JGE          q2done
	VPAND        (SI), Y15, Y0
	VPAND        32(SI), Y15, Y1
	VPAND        64(SI), Y15, Y2
	VPAND        96(SI), Y15, Y3
	VPAND        128(SI), Y15, Y4
	VPAND        160(SI), Y15, Y5
	VPMAXUD      Y4, Y0, Y0
	VPMAXUD      Y5, Y1, Y1
	VPAND        192(SI), Y15, Y4
	VPAND        224(SI), Y15, Y5
	VPMAXUD      Y4, Y2, Y2
	VPMAXUD      Y5, Y3, Y3
	HMAXUD4
	CMPL         AX, $0x0d800000
	JB           q2done
	CMPL         AX, $0x7f800000
	JAE          q2done
	VCVTPS2PH    $0, X0, X1
	VMOVD        X1, AX
	MOVW         AX, (DI)
	VMOVSS       q2consts<>+24(SB), X10
	VDIVSS       X0, X10, X10 // id = 1/d
	VBROADCASTSS X10, Y10

	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	Q2CODE(Y0)
	Q2CODE(Y1)
	Q2CODE(Y2)
	Q2CODE(Y3)
	Q2PACK(Y0, Y1, Y2, Y3)
	VMOVUPS 128(SI), Y1
	VMOVUPS 160(SI), Y2
	VMOVUPS 192(SI), Y3
	VMOVUPS 224(SI), Y5
	Q2CODE(Y1)
	Q2CODE(Y2)
	Q2CODE(Y3)
	Q2CODE(Y5)
	Q2PACK(Y1, Y2, Y3, Y5)
	VPACKUSDW    Y1, Y0, Y0
	VPERMQ       $0xd8, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPACKUSWB    X1, X0, X0
	VMOVDQU      X0, 2(DI)
	ADDQ         $256, SI
	ADDQ         $18, DI
	INCQ         BX
	JMP          q2block

q2done:
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET
