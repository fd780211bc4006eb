//go:build !purego

#include "textflag.h"

DATA q1idx<>+0(SB)/4, $0
DATA q1idx<>+4(SB)/4, $128
DATA q1idx<>+8(SB)/4, $256
DATA q1idx<>+12(SB)/4, $384
DATA q1idx<>+16(SB)/4, $512
DATA q1idx<>+20(SB)/4, $640
DATA q1idx<>+24(SB)/4, $768
DATA q1idx<>+28(SB)/4, $896
GLOBL q1idx<>(SB), RODATA|NOPTR, $32

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
