//go:build !purego

#include "textflag.h"

// func bf16ToF32AVX2(dst *float32, src *byte, n int)
// Converts n bfloat16 values (n a multiple of 16) to float32: each value is
// zero-extended to 32 bits and shifted into the top half.
TEXT ·bf16ToF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   bf16done

bf16loop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       bf16loop

bf16done:
	VZEROUPPER
	RET

// func f16ToF32F16C(dst *float32, src *byte, n int)
// Converts n IEEE half values (n a multiple of 16) to float32 with F16C's
// VCVTPH2PS: exact, subnormals included; a signalling NaN comes out quiet
// with its payload kept, which is what F16ToFloat32 does too.
TEXT ·f16ToF32F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   f16done

f16loop:
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       f16loop

f16done:
	VZEROUPPER
	RET
