//go:build !purego

#include "textflag.h"

// func f16ToF32F16C(dst *float32, src *byte, n int)
//
// Widens n half-precision values (n a multiple of 32) with VCVTPH2PS,
// which is exact and quiets a signalling NaN as ggml's conversion does.
TEXT ·f16ToF32F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

f16loop:
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VCVTPH2PS 32(SI), Y2
	VCVTPH2PS 48(SI), Y3
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	VMOVUPS   Y2, 64(DI)
	VMOVUPS   Y3, 96(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	SUBQ      $32, CX
	JNZ       f16loop
	VZEROUPPER
	RET

// func bf16ToF32AVX2(dst *float32, src *byte, n int)
//
// Widens n bfloat16 values (n a multiple of 32): each is the top half of
// its float32.
TEXT ·bf16ToF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

bf16loop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPMOVZXWD 32(SI), Y2
	VPMOVZXWD 48(SI), Y3
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VPSLLD    $16, Y2, Y2
	VPSLLD    $16, Y3, Y3
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	VMOVDQU   Y2, 64(DI)
	VMOVDQU   Y3, 96(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	SUBQ      $32, CX
	JNZ       bf16loop
	VZEROUPPER
	RET

// func halvesFiniteAVX2(p *byte, n int, exp uint16) bool
//
// Reports whether none of the n 16-bit values at p (n a multiple of 32)
// has all the bits of exp set: for exp 0x7C00 (F16) or 0x7F80 (BF16), none
// is an infinity or a NaN.
TEXT ·halvesFiniteAVX2(SB), NOSPLIT, $0-25
	MOVQ         p+0(FP), SI
	MOVQ         n+8(FP), CX
	VPBROADCASTW exp+16(FP), Y15
	VPXOR        Y0, Y0, Y0

hloop:
	VPAND    (SI), Y15, Y1
	VPAND    32(SI), Y15, Y2
	VPCMPEQW Y15, Y1, Y1
	VPCMPEQW Y15, Y2, Y2
	VPOR     Y1, Y0, Y0
	VPOR     Y2, Y0, Y0
	ADDQ     $64, SI
	SUBQ     $32, CX
	JNZ      hloop
	VPTEST   Y0, Y0
	SETEQ    ret+24(FP)
	VZEROUPPER
	RET

// func floatsFiniteAVX2(p *float32, n int) bool
//
// Reports whether none of the n float32 at p (n a multiple of 16) is an
// infinity or a NaN (exponent bits all ones).
TEXT ·floatsFiniteAVX2(SB), NOSPLIT, $0-17
	MOVQ         p+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVL         $0x7f800000, AX
	MOVD         AX, X15
	VPBROADCASTD X15, Y15
	VPXOR        Y0, Y0, Y0

floop:
	VPAND    (SI), Y15, Y1
	VPAND    32(SI), Y15, Y2
	VPCMPEQD Y15, Y1, Y1
	VPCMPEQD Y15, Y2, Y2
	VPOR     Y1, Y0, Y0
	VPOR     Y2, Y0, Y0
	ADDQ     $64, SI
	SUBQ     $16, CX
	JNZ      floop
	VPTEST   Y0, Y0
	SETEQ    ret+16(FP)
	VZEROUPPER
	RET

// NONFINITE16 jumps to bad when one of the 16 float32 in Y0 and Y1 is a NaN
// or an infinity (exponent bits, Y15, all ones); clobbers Y2 and Y3.
#define NONFINITE16(bad) \
	VPAND    Y15, Y0, Y2; \
	VPAND    Y15, Y1, Y3; \
	VPCMPEQD Y15, Y2, Y2; \
	VPCMPEQD Y15, Y3, Y3; \
	VPOR     Y3, Y2, Y2;  \
	VPTEST   Y2, Y2;      \
	JNZ      bad

// func f32ToF16FiniteF16C(dst *byte, src *float32, n int) bool
//
// Narrows n float32 (n a multiple of 16) to half precision with VCVTPS2PH
// rounding to nearest even, which for finite values is ggml's conversion
// (subnormal halves included, overflow to infinity). It stops, returning
// false, at the first group of 16 holding a NaN or an infinity.
TEXT ·f32ToF16FiniteF16C(SB), NOSPLIT, $0-25
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVL         $0x7f800000, AX
	MOVD         AX, X15
	VPBROADCASTD X15, Y15

tohloop:
	VMOVUPS   (SI), Y0
	VMOVUPS   32(SI), Y1
	NONFINITE16(tohbad)
	VCVTPS2PH $0, Y0, (DI)
	VCVTPS2PH $0, Y1, 16(DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	JNZ       tohloop
	MOVB      $1, ret+24(FP)
	VZEROUPPER
	RET

tohbad:
	MOVB $0, ret+24(FP)
	VZEROUPPER
	RET

// func f32ToBF16FiniteAVX2(dst *byte, src *float32, n int) bool
//
// Rounds n float32 (n a multiple of 16) to bfloat16 as ggml does, the 16
// dropped bits to nearest even: (u + 0x7FFF + (u>>16 & 1)) >> 16. It
// stops, returning false, at the first group of 16 holding a NaN or an
// infinity.
TEXT ·f32ToBF16FiniteAVX2(SB), NOSPLIT, $0-25
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVL         $0x7f800000, AX
	MOVD         AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x7fff, AX
	MOVD         AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $1, AX
	MOVD         AX, X13
	VPBROADCASTD X13, Y13

tobloop:
	VMOVDQU  (SI), Y0
	VMOVDQU  32(SI), Y1
	NONFINITE16(tobbad)
	VPSRLD   $16, Y0, Y2
	VPSRLD   $16, Y1, Y3
	VPAND    Y13, Y2, Y2
	VPAND    Y13, Y3, Y3
	VPADDD   Y14, Y2, Y2
	VPADDD   Y14, Y3, Y3
	VPADDD   Y2, Y0, Y0
	VPADDD   Y3, Y1, Y1
	VPSRLD   $16, Y0, Y0
	VPSRLD   $16, Y1, Y1
	VPACKUSDW Y1, Y0, Y0
	VPERMQ   $0xd8, Y0, Y0
	VMOVDQU  Y0, (DI)
	ADDQ     $64, SI
	ADDQ     $32, DI
	SUBQ     $16, CX
	JNZ      tobloop
	MOVB     $1, ret+24(FP)
	VZEROUPPER
	RET

tobbad:
	MOVB $0, ret+24(FP)
	VZEROUPPER
	RET

// func f32CopyFiniteAVX2(dst *byte, src *float32, n int) bool
//
// Copies n float32 (n a multiple of 16), stopping, with false, at the first
// group of 16 holding a NaN or an infinity.
TEXT ·f32CopyFiniteAVX2(SB), NOSPLIT, $0-25
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVL         $0x7f800000, AX
	MOVD         AX, X15
	VPBROADCASTD X15, Y15

cploop:
	VMOVDQU  (SI), Y0
	VMOVDQU  32(SI), Y1
	NONFINITE16(cpbad)
	VMOVDQU  Y0, (DI)
	VMOVDQU  Y1, 32(DI)
	ADDQ     $64, SI
	ADDQ     $64, DI
	SUBQ     $16, CX
	JNZ      cploop
	MOVB     $1, ret+24(FP)
	VZEROUPPER
	RET

cpbad:
	MOVB $0, ret+24(FP)
	VZEROUPPER
	RET
