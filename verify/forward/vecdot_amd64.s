//go:build !purego

#include "textflag.h"

// i8sums16AVX2 order of the per-16 sums of four groups after the VPHADDDs
// (lane low halves first): back to group order.
DATA sums16perm<>+0(SB)/4, $0
DATA sums16perm<>+4(SB)/4, $4
DATA sums16perm<>+8(SB)/4, $1
DATA sums16perm<>+12(SB)/4, $5
DATA sums16perm<>+16(SB)/4, $2
DATA sums16perm<>+20(SB)/4, $6
DATA sums16perm<>+24(SB)/4, $3
DATA sums16perm<>+28(SB)/4, $7
GLOBL sums16perm<>(SB), RODATA|NOPTR, $32

// func i8sums16AVX2(a *byte, astride int, b *int8, groups int, out *int32)
//
// For each group of 32: |a| (unsigned) times b with a's sign (VPSIGNB),
// pairs added to int16 (VPMADDUBSW: |a| ≤ 128 and |b| ≤ 127, so no pair
// saturates), then to int32 (VPMADDWD by ones), then the two halves of 16.
// Exact integer sums, as the Go form.
TEXT ·i8sums16AVX2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ astride+8(FP), R8
	MOVQ b+16(FP), DI
	MOVQ groups+24(FP), CX
	MOVQ out+32(FP), DX
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15
	VMOVDQU  sums16perm<>(SB), Y14
	LEAQ     (R8)(R8*2), R9

loop4:
	CMPQ CX, $4
	JLT  tail

	VMOVDQU    (SI), Y0
	VMOVDQU    (DI), Y1
	VPSIGNB    Y0, Y0, Y2
	VPSIGNB    Y0, Y1, Y1
	VPMADDUBSW Y1, Y2, Y4
	VPMADDWD   Y15, Y4, Y4

	VMOVDQU    (SI)(R8*1), Y0
	VMOVDQU    32(DI), Y1
	VPSIGNB    Y0, Y0, Y2
	VPSIGNB    Y0, Y1, Y1
	VPMADDUBSW Y1, Y2, Y5
	VPMADDWD   Y15, Y5, Y5

	VMOVDQU    (SI)(R8*2), Y0
	VMOVDQU    64(DI), Y1
	VPSIGNB    Y0, Y0, Y2
	VPSIGNB    Y0, Y1, Y1
	VPMADDUBSW Y1, Y2, Y6
	VPMADDWD   Y15, Y6, Y6

	VMOVDQU    (SI)(R9*1), Y0
	VMOVDQU    96(DI), Y1
	VPSIGNB    Y0, Y0, Y2
	VPSIGNB    Y0, Y1, Y1
	VPMADDUBSW Y1, Y2, Y7
	VPMADDWD   Y15, Y7, Y7

	VPHADDD Y5, Y4, Y4
	VPHADDD Y7, Y6, Y6
	VPHADDD Y6, Y4, Y4
	VPERMD  Y4, Y14, Y4
	VMOVDQU Y4, (DX)

	LEAQ (SI)(R8*4), SI
	ADDQ $128, DI
	ADDQ $32, DX
	SUBQ $4, CX
	JMP  loop4

tail:
	TESTQ CX, CX
	JEQ   done
	VMOVDQU      (SI), Y0
	VMOVDQU      (DI), Y1
	VPSIGNB      Y0, Y0, Y2
	VPSIGNB      Y0, Y1, Y1
	VPMADDUBSW   Y1, Y2, Y4
	VPMADDWD     Y15, Y4, Y4
	VPHADDD      Y4, Y4, Y4
	VPHADDD      Y4, Y4, Y4
	VMOVD        X4, (DX)
	VEXTRACTI128 $1, Y4, X5
	VMOVD        X5, 4(DX)
	ADDQ         R8, SI
	ADDQ         $32, DI
	ADDQ         $8, DX
	DECQ         CX
	JMP          tail

done:
	VZEROUPPER
	RET

// func dotF32AVX2(a, b *float32, n int) float32
//
// n a multiple of 32; four 8-lane FMA accumulators.
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

floop:
	CMPQ        CX, $32
	JLT         fdone
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         floop

fdone:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func i8dotQ8AVX2(a *byte, astride int, b *int8, wd, xd *float32, groups int) float32
//
// Σ over groups of 32 of (Σ a·b)·(wd·xd), groups a multiple of 4: the
// integer sums as in i8sums16AVX2, four groups' converted to float32 and
// scaled, accumulated in four lanes.
TEXT ·i8dotQ8AVX2(SB), NOSPLIT, $0-52
	MOVQ     a+0(FP), SI
	MOVQ     astride+8(FP), R8
	MOVQ     b+16(FP), DI
	MOVQ     wd+24(FP), R10
	MOVQ     xd+32(FP), R11
	MOVQ     groups+40(FP), CX
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15
	VXORPS   X13, X13, X13
	LEAQ     (R8)(R8*2), R9

qloop:
	CMPQ CX, $4
	JLT  qdone

	VMOVDQU    (SI), Y0
	VMOVDQU    (DI), Y1
	VPSIGNB    Y0, Y0, Y2
	VPSIGNB    Y0, Y1, Y1
	VPMADDUBSW Y1, Y2, Y4
	VPMADDWD   Y15, Y4, Y4

	VMOVDQU    (SI)(R8*1), Y0
	VMOVDQU    32(DI), Y1
	VPSIGNB    Y0, Y0, Y2
	VPSIGNB    Y0, Y1, Y1
	VPMADDUBSW Y1, Y2, Y5
	VPMADDWD   Y15, Y5, Y5

	VMOVDQU    (SI)(R8*2), Y0
	VMOVDQU    64(DI), Y1
	VPSIGNB    Y0, Y0, Y2
	VPSIGNB    Y0, Y1, Y1
	VPMADDUBSW Y1, Y2, Y6
	VPMADDWD   Y15, Y6, Y6

	VMOVDQU    (SI)(R9*1), Y0
	VMOVDQU    96(DI), Y1
	VPSIGNB    Y0, Y0, Y2
	VPSIGNB    Y0, Y1, Y1
	VPMADDUBSW Y1, Y2, Y7
	VPMADDWD   Y15, Y7, Y7

	VPHADDD      Y5, Y4, Y4
	VPHADDD      Y7, Y6, Y6
	VPHADDD      Y6, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPADDD       X5, X4, X4
	VCVTDQ2PS    X4, X4
	VMOVUPS      (R10), X5
	VMULPS       (R11), X5, X5
	VFMADD231PS  X5, X4, X13

	LEAQ (SI)(R8*4), SI
	ADDQ $128, DI
	ADDQ $16, R10
	ADDQ $16, R11
	SUBQ $4, CX
	JMP  qloop

qdone:
	VHADDPS X13, X13, X13
	VHADDPS X13, X13, X13
	VZEROUPPER
	MOVSS   X13, ret+48(FP)
	RET

// func i8dotKAVX2(a, b *int8, scales *int32, blocks int, out *int32)
//
// For each super-block of 256: Σ over its sixteen 16s of scale·(Σ a·b),
// in int32 (at most 2^26 in magnitude for 6-bit scales and int8 levels).
// The scales (int32 in memory, in int16 range) multiply the int16 pair sums
// in VPMADDWD, as ggml's AVX2 kernels do.
TEXT ·i8dotKAVX2(SB), NOSPLIT, $0-40
	MOVQ     a+0(FP), SI
	MOVQ     b+8(FP), DI
	MOVQ     scales+16(FP), R10
	MOVQ     blocks+24(FP), CX
	MOVQ     out+32(FP), DX

kblock:
	TESTQ  CX, CX
	JEQ    kdone
	VPXOR  Y13, Y13, Y13
	MOVQ   $8, BX

kgroup:
	VMOVDQU      (SI), Y0
	VMOVDQU      (DI), Y1
	VPSIGNB      Y0, Y0, Y2
	VPSIGNB      Y0, Y1, Y1
	VPMADDUBSW   Y1, Y2, Y4
	VPBROADCASTW (R10), Y8
	VPBROADCASTW 4(R10), Y9
	VPBLENDD     $0xF0, Y9, Y8, Y8
	VPMADDWD     Y8, Y4, Y4
	VPADDD       Y4, Y13, Y13
	ADDQ         $32, SI
	ADDQ         $32, DI
	ADDQ         $8, R10
	DECQ         BX
	JNZ          kgroup

	VEXTRACTI128 $1, Y13, X14
	VPADDD       X14, X13, X13
	VPHADDD      X13, X13, X13
	VPHADDD      X13, X13, X13
	VMOVD        X13, (DX)
	ADDQ         $4, DX
	DECQ         CX
	JMP          kblock

kdone:
	VZEROUPPER
	RET

// func q4kDotAVX2(x *byte, b *int8, scales *int32, blocks int, out *int32)
//
// dotK, with one scale per 32 values, straight on Q4_K blocks (144 bytes, levels from byte 16 on): each
// 32 bytes hold 64 levels, 32 low nibbles then 32 high ones, all 0..15, so
// VPMADDUBSW takes them as the unsigned operand as they are; VPMADDWD by
// the broadcast scale (int16 range) gives scale·(pair sums) in int32.
TEXT ·q4kDotAVX2(SB), NOSPLIT, $0-40
	MOVQ         x+0(FP), SI
	MOVQ         b+8(FP), DI
	MOVQ         scales+16(FP), R10
	MOVQ         blocks+24(FP), CX
	MOVQ         out+32(FP), DX
	MOVQ         $0x0F0F0F0F, AX
	MOVQ         AX, X14
	VPBROADCASTD X14, Y14

q4block:
	TESTQ CX, CX
	JEQ   q4done
	VPXOR Y13, Y13, Y13
	LEAQ  16(SI), R11
	MOVQ  $4, BX

q4chunk:
	VMOVDQU      (R11), Y0
	VPAND        Y14, Y0, Y1
	VPSRLW       $4, Y0, Y0
	VPAND        Y14, Y0, Y0
	VPMADDUBSW   (DI), Y1, Y2
	VPBROADCASTW (R10), Y8
	VPMADDWD     Y8, Y2, Y2
	VPADDD       Y2, Y13, Y13
	VPMADDUBSW   32(DI), Y0, Y3
	VPBROADCASTW 4(R10), Y9
	VPMADDWD     Y9, Y3, Y3
	VPADDD       Y3, Y13, Y13
	ADDQ         $32, R11
	ADDQ         $64, DI
	ADDQ         $8, R10
	DECQ         BX
	JNZ          q4chunk

	VEXTRACTI128 $1, Y13, X12
	VPADDD       X12, X13, X13
	VPHADDD      X13, X13, X13
	VPHADDD      X13, X13, X13
	VMOVD        X13, (DX)
	ADDQ         $144, SI
	ADDQ         $4, DX
	DECQ         CX
	JMP          q4block

q4done:
	VZEROUPPER
	RET

// func dotF32x4AVX2(w, x0, x1, x2, x3 *float32, n int, out *float32)
//
// The products of w with four vectors at once, n a multiple of 16: each
// load of w serves four FMAs; two 8-lane accumulators per vector.
TEXT ·dotF32x4AVX2(SB), NOSPLIT, $0-56
	MOVQ   w+0(FP), SI
	MOVQ   x0+8(FP), R8
	MOVQ   x1+16(FP), R9
	MOVQ   x2+24(FP), R10
	MOVQ   x3+32(FP), R11
	MOVQ   n+40(FP), CX
	MOVQ   out+48(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   AX, AX

f4loop:
	CMPQ        CX, $16
	JLT         f4done
	VMOVUPS     (SI)(AX*1), Y8
	VMOVUPS     32(SI)(AX*1), Y9
	VFMADD231PS (R8)(AX*1), Y8, Y0
	VFMADD231PS 32(R8)(AX*1), Y9, Y1
	VFMADD231PS (R9)(AX*1), Y8, Y2
	VFMADD231PS 32(R9)(AX*1), Y9, Y3
	VFMADD231PS (R10)(AX*1), Y8, Y4
	VFMADD231PS 32(R10)(AX*1), Y9, Y5
	VFMADD231PS (R11)(AX*1), Y8, Y6
	VFMADD231PS 32(R11)(AX*1), Y9, Y7
	ADDQ        $64, AX
	SUBQ        $16, CX
	JMP         f4loop

f4done:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y5, Y4, Y4
	VADDPS       Y7, Y6, Y6
	VHADDPS      Y2, Y0, Y0
	VHADDPS      Y6, Y4, Y4
	VHADDPS      Y4, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVUPS      X0, (DX)
	VZEROUPPER
	RET

// func i8dotQ8x4AVX2(a *byte, astride int, b *[4]*int8, wd *float32, xd *[4]*float32, groups int, out *float32)
//
// dotQ8 of one row with four inputs: each group of the row is loaded and
// made positive once for the four; each input's int32 sums are converted
// to float32 and scaled (wd·xd) in eight lanes, as ggml's AVX2 vec_dot
// does, and the lanes added at the end.
TEXT ·i8dotQ8x4AVX2(SB), NOSPLIT, $0-56
	MOVQ     a+0(FP), SI
	MOVQ     astride+8(FP), R8
	MOVQ     b+16(FP), AX
	MOVQ     0(AX), R9
	MOVQ     8(AX), R10
	MOVQ     16(AX), R11
	MOVQ     24(AX), R12
	MOVQ     wd+24(FP), DI
	MOVQ     xd+32(FP), AX
	MOVQ     0(AX), R13
	MOVQ     8(AX), R14
	MOVQ     16(AX), R15
	MOVQ     24(AX), BX
	MOVQ     groups+40(FP), CX
	MOVQ     out+48(FP), DX
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15
	VXORPS   Y3, Y3, Y3
	VXORPS   Y4, Y4, Y4
	VXORPS   Y5, Y5, Y5
	VXORPS   Y6, Y6, Y6
	XORQ     AX, AX

x4loop:
	TESTQ        CX, CX
	JEQ          x4done
	VMOVDQU      (SI), Y0
	VPSIGNB      Y0, Y0, Y1
	VBROADCASTSS (DI)(AX*4), Y14

	VMOVDQU      (R9), Y2
	VPSIGNB      Y0, Y2, Y2
	VPMADDUBSW   Y2, Y1, Y2
	VPMADDWD     Y15, Y2, Y2
	VCVTDQ2PS    Y2, Y2
	VBROADCASTSS (R13)(AX*4), Y13
	VMULPS       Y14, Y13, Y13
	VFMADD231PS  Y13, Y2, Y3

	VMOVDQU      (R10), Y2
	VPSIGNB      Y0, Y2, Y2
	VPMADDUBSW   Y2, Y1, Y2
	VPMADDWD     Y15, Y2, Y2
	VCVTDQ2PS    Y2, Y2
	VBROADCASTSS (R14)(AX*4), Y13
	VMULPS       Y14, Y13, Y13
	VFMADD231PS  Y13, Y2, Y4

	VMOVDQU      (R11), Y2
	VPSIGNB      Y0, Y2, Y2
	VPMADDUBSW   Y2, Y1, Y2
	VPMADDWD     Y15, Y2, Y2
	VCVTDQ2PS    Y2, Y2
	VBROADCASTSS (R15)(AX*4), Y13
	VMULPS       Y14, Y13, Y13
	VFMADD231PS  Y13, Y2, Y5

	VMOVDQU      (R12), Y2
	VPSIGNB      Y0, Y2, Y2
	VPMADDUBSW   Y2, Y1, Y2
	VPMADDWD     Y15, Y2, Y2
	VCVTDQ2PS    Y2, Y2
	VBROADCASTSS (BX)(AX*4), Y13
	VMULPS       Y14, Y13, Y13
	VFMADD231PS  Y13, Y2, Y6

	ADDQ R8, SI
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	INCQ AX
	DECQ CX
	JMP  x4loop

x4done:
	VHADDPS      Y4, Y3, Y3
	VHADDPS      Y6, Y5, Y5
	VHADDPS      Y5, Y3, Y3
	VEXTRACTF128 $1, Y3, X1
	VADDPS       X1, X3, X3
	VMOVUPS      X3, (DX)
	VZEROUPPER
	RET
