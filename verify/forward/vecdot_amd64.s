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

// 0x3F in every byte (Q4SCALES).
DATA q4kmask3f<>+0(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA q4kmask3f<>+8(SB)/8, $0x3f3f3f3f3f3f3f3f
GLOBL q4kmask3f<>(SB), RODATA|NOPTR, $16

// 0x0F and 0x30 in every byte of a dword, broadcast by KPROLOGUE and
// Q6PROLOGUE (from memory: an SSE move from a GP register after AVX code
// would cost a transition).
DATA kmask0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL kmask0f<>(SB), RODATA|NOPTR, $4
DATA kmask30<>+0(SB)/4, $0x30303030
GLOBL kmask30<>(SB), RODATA|NOPTR, $4

// 0x80 in every byte of a dword (q8RawDot4VNNI: 128 as VPDPBUSD's unsigned
// operand).
DATA kmask80<>+0(SB)/4, $0x80808080
GLOBL kmask80<>(SB), RODATA|NOPTR, $4

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

// The fused Q4_K and Q6_K products (vecdot_kfused.go), straight on the
// stored blocks. Registers: SI the weight blocks, DI the activations' Q8_K
// blocks, token t at DI + t·R8 (R9 = 3·R8); Y0–Y3 the float32 sums of
// tokens 0–3, Y4–Y7 their int32 sums of the current super-block (eight
// lanes, added at the end), Y15 0x0F in every byte. Each block's scales
// (and mins) are widened to int16 into the frame (0(R10) on), its fp16 d
// (and dmin) converted with VCVTPH2PS. Levels are unsigned (nibbles, or
// Q6_K's 0..63), the activation signed, so VPMADDUBSW takes them as they
// are and no pair saturates (63·128·2 < 2^15); VPMADDWD by the broadcast
// scale gives scale·(pair sums) in int32, as ggml's AVX2 kernels do.

// Q4_K's 12 bytes of 6-bit scales and mins (get_scale_min_k4) to 8 int16
// scales at 0(R10) and the 8 mins, each twice (one per 16 values), at
// 16(R10), in vector registers: bytes 0–3 & 63 are scales 0–3, bytes 4–7 &
// 63 mins 0–3; scales 4–7 are the low nibbles of bytes 8–11 with the top
// two bits of bytes 0–3 above them, mins 4–7 the high nibbles with those of
// bytes 4–7. Clobbers Y8–Y12 (Y15 holds 0x0F in every byte).
#define Q4SCALES \
	VMOVDQU    4(SI), X8; \
	VPAND      q4kmask3f<>(SB), X8, X9; \
	VPXOR      X9, X8, X10; \
	VPSRLW     $2, X10, X10; \
	VPSHUFD    $0xAA, X8, X11; \
	VPSRLW     $4, X11, X12; \
	VPUNPCKLDQ X12, X11, X11; \
	VPAND      X15, X11, X11; \
	VPOR       X10, X11, X11; \
	VPUNPCKLDQ X11, X9, X9; \
	VPMOVZXBW  X9, X10; \
	VMOVDQU    X10, 0(R10); \
	VPUNPCKHBW X9, X9, X11; \
	VPMOVZXBW  X11, Y11; \
	VMOVDQU    Y11, 16(R10)

// Q4_K: 32 bytes of levels (64 values: 32 low nibbles, 32 high) split into
// Y8 (low) and Y9 (high), their two scales broadcast in Y10 and Y11.
#define Q4SPLIT(W, S0, S1) \
	VMOVDQU      W, Y9; \
	VPAND        Y15, Y9, Y8; \
	VPSRLW       $4, Y9, Y9; \
	VPAND        Y15, Y9, Y9; \
	VPBROADCASTW S0, Y10; \
	VPBROADCASTW S1, Y11

// One token's products with Y8 and Y9: A0 and A1 its 32 + 32 levels.
#define Q4TOK(A0, A1, ACC) \
	VPMADDUBSW A0, Y8, Y12; \
	VPMADDWD   Y10, Y12, Y12; \
	VPADDD     Y12, ACC, ACC; \
	VPMADDUBSW A1, Y9, Y13; \
	VPMADDWD   Y11, Y13, Y13; \
	VPADDD     Y13, ACC, ACC

// The block's d and dmin broadcast into Y12 and Y14.
#define Q4D \
	VCVTPH2PS    (SI), X14; \
	VBROADCASTSS X14, Y12; \
	VPSHUFD      $0x55, X14, X14; \
	VINSERTI128  $1, X14, Y14, Y14

// End of a super-block for one token (D its scale, BS its sums of 16):
// FACC += d·da·(int sums) − dmin·da·(mins · sums); ACC cleared.
#define Q4ENDC(D, BS, ACC, FACC, CLEAR) \
	VBROADCASTSS D, Y10; \
	VMULPS       Y12, Y10, Y11; \
	VMULPS       Y14, Y10, Y10; \
	VCVTDQ2PS    ACC, ACC; \
	VFMADD231PS  Y11, ACC, FACC; \
	VMOVDQU      BS, Y13; \
	VPMADDWD     16(R10), Y13, Y13; \
	VCVTDQ2PS    Y13, Y13; \
	VFNMADD231PS Y10, Y13, FACC; \
	CLEAR        ACC, ACC, ACC

#define Q4END(D, BS, ACC, FACC) Q4ENDC(D, BS, ACC, FACC, VPXOR)

#define KPROLOGUE \
	VPBROADCASTD kmask0f<>(SB), Y15; \
	VXORPS       Y0, Y0, Y0; \
	VXORPS       Y1, Y1, Y1; \
	VXORPS       Y2, Y2, Y2; \
	VXORPS       Y3, Y3, Y3; \
	VPXOR        Y4, Y4, Y4; \
	VPXOR        Y5, Y5, Y5; \
	VPXOR        Y6, Y6, Y6; \
	VPXOR        Y7, Y7, Y7

// The four float32 sums Y0–Y3 added across their lanes into (DX).
#define KSTORE4 \
	VHADDPS      Y1, Y0, Y0; \
	VHADDPS      Y3, Y2, Y2; \
	VHADDPS      Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVUPS      X0, (DX)

// Y0's lanes added into X0's first.
#define KSUM1 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VHADDPS      X0, X0, X0; \
	VHADDPS      X0, X0, X0

// Q4TOK with VNNI: VPDPWSSD adds scale·(pair sums) to ACC in one step.
#define Q4TOKV(A0, A1, ACC) \
	VPMADDUBSW A0, Y8, Y12; \
	VPDPWSSD   Y10, Y12, ACC; \
	VPMADDUBSW A1, Y9, Y13; \
	VPDPWSSD   Y11, Y13, ACC

// The token step TOK (Q4TOK or Q4TOKV) for the four tokens, their levels
// at A0 and A1 of each.
#define Q4TOKS4(TOK, A0, A1) \
	TOK(A0(DI), A1(DI), Y4); \
	TOK(A0(DI)(R8*1), A1(DI)(R8*1), Y5); \
	TOK(A0(DI)(R8*2), A1(DI)(R8*2), Y6); \
	TOK(A0(DI)(R9*1), A1(DI)(R9*1), Y7)

// A Q4_K block for four tokens, TOK the token step (Q4TOK, or Q4TOKV with
// VNNI).
#define Q4BLOCK4(TOK) \
	Q4SCALES; \
	Q4SPLIT(16(SI), 0(R10), 2(R10)); \
	Q4TOKS4(TOK, 4, 36); \
	Q4SPLIT(48(SI), 4(R10), 6(R10)); \
	Q4TOKS4(TOK, 68, 100); \
	Q4SPLIT(80(SI), 8(R10), 10(R10)); \
	Q4TOKS4(TOK, 132, 164); \
	Q4SPLIT(112(SI), 12(R10), 14(R10)); \
	Q4TOKS4(TOK, 196, 228); \
	Q4D; \
	Q4END((DI), 260(DI), Y4, Y0); \
	Q4END((DI)(R8*1), 260(DI)(R8*1), Y5, Y1); \
	Q4END((DI)(R8*2), 260(DI)(R8*2), Y6, Y2); \
	Q4END((DI)(R9*1), 260(DI)(R9*1), Y7, Y3)

// func q4kDot4AVX2(x *byte, a *byte, astride int, blocks int, out *float32, vnni bool)
//
// With vnni, the token steps use AVX512-VNNI's VPDPWSSD (Q4TOKV).
TEXT ·q4kDot4AVX2(SB), NOSPLIT, $48-41
	MOVQ x+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ astride+16(FP), R8
	MOVQ blocks+24(FP), CX
	MOVQ out+32(FP), DX
	MOVB vnni+40(FP), BX
	LEAQ (R8)(R8*2), R9
	LEAQ 0(SP), R10
	KPROLOGUE
	TESTB BX, BX
	JNE   q4vblock

q44block:
	TESTQ CX, CX
	JEQ   q44done
	Q4BLOCK4(Q4TOK)
	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JMP  q44block

q4vblock:
	TESTQ CX, CX
	JEQ   q44done
	Q4BLOCK4(Q4TOKV)
	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JMP  q4vblock

q44done:
	KSTORE4
	VZEROUPPER
	RET

// func q4kRowsAVX2(x, a *byte, blocks, rows int, out *float32)
//
// out[r] = the product of row r of x (rows of blocks Q4_K blocks, one after
// the other) with the Q8_K activation a: a GEMV for one token, the rows
// streamed in order in one call.
TEXT ·q4kRowsAVX2(SB), NOSPLIT, $48-40
	MOVQ x+0(FP), SI
	MOVQ a+8(FP), R13
	MOVQ blocks+16(FP), R12
	MOVQ rows+24(FP), BX
	MOVQ out+32(FP), DX
	LEAQ 0(SP), R10
	KPROLOGUE

q4rrow:
	TESTQ  BX, BX
	JEQ    q4rdone
	MOVQ   R13, DI
	MOVQ   R12, CX
	VXORPS Y0, Y0, Y0

q4rblock:
	TESTQ CX, CX
	JEQ   q4rend
	Q4SCALES
	Q4SPLIT(16(SI), 0(R10), 2(R10))
	Q4TOK(4(DI), 36(DI), Y4)
	Q4SPLIT(48(SI), 4(R10), 6(R10))
	Q4TOK(68(DI), 100(DI), Y5)
	Q4SPLIT(80(SI), 8(R10), 10(R10))
	Q4TOK(132(DI), 164(DI), Y4)
	Q4SPLIT(112(SI), 12(R10), 14(R10))
	Q4TOK(196(DI), 228(DI), Y5)
	VPADDD Y5, Y4, Y4
	VPXOR  Y5, Y5, Y5
	Q4D
	Q4END((DI), 260(DI), Y4, Y0)
	ADDQ   $144, SI
	ADDQ   $292, DI
	DECQ   CX
	JMP    q4rblock

q4rend:
	KSUM1
	VMOVSS X0, (DX)
	ADDQ   $4, DX
	DECQ   BX
	JMP    q4rrow

q4rdone:
	VZEROUPPER
	RET

// Q6_K's 16 int8 scales widened to int16 at 0(R10), its d broadcast in Y13.
#define Q6SCALES \
	VPMOVSXBW    192(SI), Y9; \
	VMOVDQU      Y9, 0(R10); \
	VPBROADCASTW 208(SI), X13; \
	VCVTPH2PS    X13, Y13

// Q6_K: 32 levels 0..63 into Y8 from 32 bytes of low bits QL (low or high
// nibbles) and 32 of high bits QH (the pair at bits 0, 2, 4 or 6 moved to
// bits 4–5; Y14 is 0x30 in every byte); Y9 is clobbered.
#define Q6L0(QL, QH) \
	VPAND   QL, Y15, Y8; \
	VMOVDQU QH, Y9; \
	VPSLLW  $4, Y9, Y9; \
	VPAND   Y14, Y9, Y9; \
	VPOR    Y9, Y8, Y8

#define Q6L1(QL, QH) \
	VPAND   QL, Y15, Y8; \
	VMOVDQU QH, Y9; \
	VPSLLW  $2, Y9, Y9; \
	VPAND   Y14, Y9, Y9; \
	VPOR    Y9, Y8, Y8

#define Q6L2(QL, QH) \
	VMOVDQU QL, Y8; \
	VPSRLW  $4, Y8, Y8; \
	VPAND   Y15, Y8, Y8; \
	VPAND   QH, Y14, Y9; \
	VPOR    Y9, Y8, Y8

#define Q6L3(QL, QH) \
	VMOVDQU QL, Y8; \
	VPSRLW  $4, Y8, Y8; \
	VPAND   Y15, Y8, Y8; \
	VMOVDQU QH, Y9; \
	VPSRLW  $2, Y9, Y9; \
	VPAND   Y14, Y9, Y9; \
	VPOR    Y9, Y8, Y8

// The scales of the two 16s of Y8: S0 in the low lane, S1 in the high.
#define Q6SC(S0, S1) \
	VPBROADCASTW S0, Y10; \
	VPBROADCASTW S1, Y11; \
	VPBLENDD     $0xF0, Y11, Y10, Y10

#define Q6TOK(A, ACC) \
	VPMADDUBSW A, Y8, Y12; \
	VPMADDWD   Y10, Y12, Y12; \
	VPADDD     Y12, ACC, ACC

// End of a super-block for one token: ACC less 32·(scales · sums of 16),
// FACC += d·da·ACC (Y13 = d broadcast); ACC cleared.
#define Q6ENDC(D, BS, ACC, FACC, CLEAR) \
	VMOVDQU      BS, Y12; \
	VPMADDWD     0(R10), Y12, Y12; \
	VPSLLD       $5, Y12, Y12; \
	VPSUBD       Y12, ACC, ACC; \
	VCVTDQ2PS    ACC, ACC; \
	VBROADCASTSS D, Y12; \
	VMULPS       Y13, Y12, Y12; \
	VFMADD231PS  Y12, ACC, FACC; \
	CLEAR        ACC, ACC, ACC

#define Q6END(D, BS, ACC, FACC) Q6ENDC(D, BS, ACC, FACC, VPXOR)

#define Q6PROLOGUE \
	KPROLOGUE; \
	VPBROADCASTD kmask30<>(SB), Y14

// The token step TOK (Q6TOK or Q6TOKV) for the four tokens, their levels at
// A of each.
#define TOKS4(TOK, A) \
	TOK(A(DI), Y4); \
	TOK(A(DI)(R8*1), Y5); \
	TOK(A(DI)(R8*2), Y6); \
	TOK(A(DI)(R9*1), Y7)

// Half H of a Q6_K block for four tokens, TOK the token step (Q6TOK, or
// Q6TOKV with VNNI): levels from QL0/QL1 (64 bytes at 64·H) and QH (32
// bytes at 128 + 32·H), scales S0–S7 (8·H on), activation levels at A0–A3
// (4 + 128·H on).
#define Q6HALF4(TOK, QL0, QL1, QH, S0, S1, S2, S3, S4, S5, S6, S7, A0, A1, A2, A3) \
	Q6L0(QL0, QH); \
	Q6SC(S0, S1); \
	TOKS4(TOK, A0); \
	Q6L1(QL1, QH); \
	Q6SC(S2, S3); \
	TOKS4(TOK, A1); \
	Q6L2(QL0, QH); \
	Q6SC(S4, S5); \
	TOKS4(TOK, A2); \
	Q6L3(QL1, QH); \
	Q6SC(S6, S7); \
	TOKS4(TOK, A3)

// Q6TOK with VNNI: VPDPWSSD adds scale·(pair sums) to ACC in one step.
#define Q6TOKV(A, ACC) \
	VPMADDUBSW A, Y8, Y12; \
	VPDPWSSD   Y10, Y12, ACC

#define Q6HALF1(QL0, QL1, QH, S0, S1, S2, S3, S4, S5, S6, S7, A0, A1, A2, A3) \
	Q6L0(QL0, QH); \
	Q6SC(S0, S1); \
	Q6TOK(A0(DI), Y4); \
	Q6L1(QL1, QH); \
	Q6SC(S2, S3); \
	Q6TOK(A1(DI), Y5); \
	Q6L2(QL0, QH); \
	Q6SC(S4, S5); \
	Q6TOK(A2(DI), Y4); \
	Q6L3(QL1, QH); \
	Q6SC(S6, S7); \
	Q6TOK(A3(DI), Y5)

// A Q6_K block for four tokens, TOK the token step (Q6TOK, or Q6TOKV with
// VNNI).
#define Q6BLOCK4(TOK) \
	Q6SCALES; \
	Q6HALF4(TOK, 0(SI), 32(SI), 128(SI), 0(R10), 2(R10), 4(R10), 6(R10), 8(R10), 10(R10), 12(R10), 14(R10), 4, 36, 68, 100); \
	Q6HALF4(TOK, 64(SI), 96(SI), 160(SI), 16(R10), 18(R10), 20(R10), 22(R10), 24(R10), 26(R10), 28(R10), 30(R10), 132, 164, 196, 228); \
	Q6END((DI), 260(DI), Y4, Y0); \
	Q6END((DI)(R8*1), 260(DI)(R8*1), Y5, Y1); \
	Q6END((DI)(R8*2), 260(DI)(R8*2), Y6, Y2); \
	Q6END((DI)(R9*1), 260(DI)(R9*1), Y7, Y3)

// func q6kDot4AVX2(x *byte, a *byte, astride int, blocks int, out *float32, vnni bool)
//
// With vnni, the token steps use AVX512-VNNI's VPDPWSSD (Q6TOKV).
TEXT ·q6kDot4AVX2(SB), NOSPLIT, $32-41
	MOVQ x+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ astride+16(FP), R8
	MOVQ blocks+24(FP), CX
	MOVQ out+32(FP), DX
	MOVB vnni+40(FP), BX
	LEAQ (R8)(R8*2), R9
	LEAQ 0(SP), R10
	Q6PROLOGUE
	TESTB BX, BX
	JNE   q6vblock

q64block:
	TESTQ CX, CX
	JEQ   q64done
	Q6BLOCK4(Q6TOK)
	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JMP  q64block

q6vblock:
	TESTQ CX, CX
	JEQ   q64done
	Q6BLOCK4(Q6TOKV)
	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JMP  q6vblock

q64done:
	KSTORE4
	VZEROUPPER
	RET

// func q6kRowsAVX2(x, a *byte, blocks, rows int, out *float32)
//
// q4kRowsAVX2 for Q6_K rows.
TEXT ·q6kRowsAVX2(SB), NOSPLIT, $32-40
	MOVQ x+0(FP), SI
	MOVQ a+8(FP), R13
	MOVQ blocks+16(FP), R12
	MOVQ rows+24(FP), BX
	MOVQ out+32(FP), DX
	LEAQ 0(SP), R10
	Q6PROLOGUE

q6rrow:
	TESTQ  BX, BX
	JEQ    q6rdone
	MOVQ   R13, DI
	MOVQ   R12, CX
	VXORPS Y0, Y0, Y0

q6rblock:
	TESTQ CX, CX
	JEQ   q6rend
	Q6SCALES
	Q6HALF1(0(SI), 32(SI), 128(SI), 0(R10), 2(R10), 4(R10), 6(R10), 8(R10), 10(R10), 12(R10), 14(R10), 4, 36, 68, 100)
	Q6HALF1(64(SI), 96(SI), 160(SI), 16(R10), 18(R10), 20(R10), 22(R10), 24(R10), 26(R10), 28(R10), 30(R10), 132, 164, 196, 228)
	VPADDD Y5, Y4, Y4
	VPXOR  Y5, Y5, Y5
	Q6END((DI), 260(DI), Y4, Y0)
	ADDQ   $210, SI
	ADDQ   $292, DI
	DECQ   CX
	JMP    q6rblock

q6rend:
	KSUM1
	VMOVSS X0, (DX)
	ADDQ   $4, DX
	DECQ   BX
	JMP    q6rrow

q6rdone:
	VZEROUPPER
	RET

// func dotF16AVX2(w *byte, x *float32, n int) float32
//
// Σ w·x with w fp16 (converted with VCVTPH2PS, exactly), n a multiple of
// 32; four 8-lane FMA accumulators, as dotF32AVX2.
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

hloop:
	CMPQ        CX, $32
	JLT         hdone
	VCVTPH2PS   (SI), Y4
	VCVTPH2PS   16(SI), Y5
	VCVTPH2PS   32(SI), Y6
	VCVTPH2PS   48(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         hloop

hdone:
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

// func dotF16x4AVX2(w *byte, x0, x1, x2, x3 *float32, n int, out *float32)
//
// dotF16AVX2 of w with four vectors at once, n a multiple of 16: each
// converted load of w serves four FMAs, as dotF32x4AVX2.
TEXT ·dotF16x4AVX2(SB), NOSPLIT, $0-56
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

h4loop:
	CMPQ        CX, $16
	JLT         h4done
	VCVTPH2PS   (SI), Y8
	VCVTPH2PS   16(SI), Y9
	VFMADD231PS (R8)(AX*1), Y8, Y0
	VFMADD231PS 32(R8)(AX*1), Y9, Y1
	VFMADD231PS (R9)(AX*1), Y8, Y2
	VFMADD231PS 32(R9)(AX*1), Y9, Y3
	VFMADD231PS (R10)(AX*1), Y8, Y4
	VFMADD231PS 32(R10)(AX*1), Y9, Y5
	VFMADD231PS (R11)(AX*1), Y8, Y6
	VFMADD231PS 32(R11)(AX*1), Y9, Y7
	ADDQ        $32, SI
	ADDQ        $64, AX
	SUBQ        $16, CX
	JMP         h4loop

h4done:
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

// Three rows' fp16 values (SI, R12, R13 at offset BX) times one input
// (ACT at offset AX): FMAs into R0, R1, R2 (Y12–Y14 hold the converted
// rows, Y15 the input).
#define F16R3(ACT, R0, R1, R2) \
	VMOVUPS     (ACT)(AX*1), Y15; \
	VFMADD231PS Y15, Y12, R0; \
	VFMADD231PS Y15, Y13, R1; \
	VFMADD231PS Y15, Y14, R2

// Four float32 sums A–D added across their lanes into 16 bytes at OUT.
#define HSUM4(A, B, C, D, XA, XB, OUT) \
	VHADDPS      B, A, A; \
	VHADDPS      D, C, C; \
	VHADDPS      C, A, A; \
	VEXTRACTF128 $1, A, XB; \
	VADDPS       XB, XA, XA; \
	VMOVUPS      XA, OUT

// func dotF16R3x4AVX2(w *byte, stride int, x0, x1, x2, x3 *float32, n int, out *float32)
//
// The products of three fp16 rows (stride bytes apart) with four inputs,
// n a multiple of 8: twelve 8-lane accumulators (row r, input t in
// Y(4r+t)), each converted row load serving four FMAs and each input load
// three, so the inputs (read from the L2 cache for a tile of tokens) cost a
// third of what dotF16x4AVX2's do per FMA. out[4r+t].
TEXT ·dotF16R3x4AVX2(SB), NOSPLIT, $0-64
	MOVQ   w+0(FP), SI
	MOVQ   stride+8(FP), R12
	MOVQ   x0+16(FP), R8
	MOVQ   x1+24(FP), R9
	MOVQ   x2+32(FP), R10
	MOVQ   x3+40(FP), R11
	MOVQ   n+48(FP), CX
	MOVQ   out+56(FP), DX
	LEAQ   (SI)(R12*2), R13
	ADDQ   SI, R12
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	XORQ   AX, AX
	XORQ   BX, BX

r3loop:
	CMPQ      CX, $8
	JLT       r3done
	VCVTPH2PS (SI)(BX*1), Y12
	VCVTPH2PS (R12)(BX*1), Y13
	VCVTPH2PS (R13)(BX*1), Y14
	F16R3(R8, Y0, Y4, Y8)
	F16R3(R9, Y1, Y5, Y9)
	F16R3(R10, Y2, Y6, Y10)
	F16R3(R11, Y3, Y7, Y11)
	ADDQ      $16, BX
	ADDQ      $32, AX
	SUBQ      $8, CX
	JMP       r3loop

r3done:
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	HSUM4(Y4, Y5, Y6, Y7, X4, X5, 16(DX))
	HSUM4(Y8, Y9, Y10, Y11, X8, X9, 32(DX))
	VZEROUPPER
	RET

// func axpyF32AVX2(y *float32, a float32, x *float32, n int)
//
// y += a·x, n a multiple of 16, one FMA (one rounding) per value.
TEXT ·axpyF32AVX2(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	VBROADCASTSS a+8(FP), Y2
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX

aloop:
	CMPQ        CX, $16
	JLT         adone
	VMOVUPS     (DI), Y0
	VMOVUPS     32(DI), Y1
	VFMADD231PS (SI), Y2, Y0
	VFMADD231PS 32(SI), Y2, Y1
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, 32(DI)
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         aloop

adone:
	VZEROUPPER
	RET

// The fp16 d of the Q8_0 block at SI times the float32 at XD, broadcast
// into DST (X5 clobbered). VCVTPH2PS reads four fp16 from SI, d and the
// block's first six level bytes, whose lanes are not used.
#define Q8D(XD, DST) \
	VCVTPH2PS    (SI), X5; \
	VMULSS       XD, X5, X5; \
	VBROADCASTSS X5, DST

// One Q8_0 block's levels (32 at 2(SI), made positive in Y2 with their
// signs moved onto the input's) times the input at B, pair sums to int32,
// to float32 in Y4.
#define Q8SUM(B) \
	VMOVDQU    B, Y1; \
	VPSIGNB    Y0, Y1, Y1; \
	VPMADDUBSW Y1, Y2, Y4; \
	VPMADDWD   Y15, Y4, Y4; \
	VCVTDQ2PS  Y4, Y4

// func q8RawRowsAVX2(x *byte, b *int8, xd *float32, blocks, rows int, out *float32)
//
// out[r] = Σ over the stored Q8_0 blocks of row r of x (34 bytes: fp16 d,
// 32 levels; rows of blocks blocks one after the other) of
// (Σ levels·b)·(d·xd), d converted with VCVTPH2PS: no unpacked copy, the
// rows streamed in order in one call (one row for a prompt's leftover
// tokens, a stretch for a generated one).
TEXT ·q8RawRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ     x+0(FP), SI
	MOVQ     blocks+24(FP), R12
	MOVQ     rows+32(FP), BX
	MOVQ     out+40(FP), DX
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15

q8rrow:
	TESTQ  BX, BX
	JEQ    q8rdone
	MOVQ   b+8(FP), DI
	MOVQ   xd+16(FP), R11
	MOVQ   R12, CX
	VXORPS Y13, Y13, Y13

q81loop:
	TESTQ       CX, CX
	JEQ         q81done
	Q8D((R11), Y6)
	VMOVDQU     2(SI), Y0
	VPSIGNB     Y0, Y0, Y2
	Q8SUM((DI))
	VFMADD231PS Y6, Y4, Y13
	ADDQ        $34, SI
	ADDQ        $32, DI
	ADDQ        $4, R11
	DECQ        CX
	JMP         q81loop

q81done:
	VEXTRACTF128 $1, Y13, X1
	VADDPS       X1, X13, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, (DX)
	ADDQ         $4, DX
	DECQ         BX
	JMP          q8rrow

q8rdone:
	VZEROUPPER
	RET

// func q8RawDot4AVX2(x *byte, b *[4]*int8, xd *[4]*float32, blocks int, out *float32)
//
// q8RawDot1AVX2 of one row with four inputs: each block's levels loaded,
// made positive and its d converted once for the four.
TEXT ·q8RawDot4AVX2(SB), NOSPLIT, $0-40
	MOVQ     x+0(FP), SI
	MOVQ     b+8(FP), AX
	MOVQ     0(AX), R8
	MOVQ     8(AX), R9
	MOVQ     16(AX), R10
	MOVQ     24(AX), R11
	MOVQ     xd+16(FP), AX
	MOVQ     0(AX), R12
	MOVQ     8(AX), R13
	MOVQ     16(AX), R14
	MOVQ     24(AX), R15
	MOVQ     blocks+24(FP), CX
	MOVQ     out+32(FP), DX
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15
	VXORPS   Y8, Y8, Y8
	VXORPS   Y9, Y9, Y9
	VXORPS   Y10, Y10, Y10
	VXORPS   Y11, Y11, Y11
	XORQ     BX, BX

q84loop:
	TESTQ       CX, CX
	JEQ         q84done
	VPBROADCASTW (SI), X5
	VCVTPH2PS   X5, Y7
	VMOVDQU     2(SI), Y0
	VPSIGNB     Y0, Y0, Y2
	Q8SUM((R8))
	VBROADCASTSS (R12)(BX*4), Y6
	VMULPS      Y7, Y6, Y6
	VFMADD231PS Y6, Y4, Y8
	Q8SUM((R9))
	VBROADCASTSS (R13)(BX*4), Y6
	VMULPS      Y7, Y6, Y6
	VFMADD231PS Y6, Y4, Y9
	Q8SUM((R10))
	VBROADCASTSS (R14)(BX*4), Y6
	VMULPS      Y7, Y6, Y6
	VFMADD231PS Y6, Y4, Y10
	Q8SUM((R11))
	VBROADCASTSS (R15)(BX*4), Y6
	VMULPS      Y7, Y6, Y6
	VFMADD231PS Y6, Y4, Y11
	ADDQ        $34, SI
	ADDQ        $32, R8
	ADDQ        $32, R9
	ADDQ        $32, R10
	ADDQ        $32, R11
	INCQ        BX
	DECQ        CX
	JMP         q84loop

q84done:
	HSUM4(Y8, Y9, Y10, Y11, X8, X9, (DX))
	VZEROUPPER
	RET

// One input's step of q8RawDot4VNNI: its 32 levels + 128 at B times the
// block's signed levels in Y0 by VPDPBUSD into an int32 lane sum that
// starts at Y12 (−128·Σ of the lane's four weight levels), so the lane ends
// at Σ w·a exactly; then as Q8SUM's caller: to float32, times d·xd, added.
#define Q8VTOK(B, XD, ACC) \
	VMOVDQU      B, Y2; \
	VMOVDQU      Y12, Y4; \
	VPDPBUSD     Y0, Y2, Y4; \
	VCVTDQ2PS    Y4, Y4; \
	VBROADCASTSS XD, Y6; \
	VMULPS       Y7, Y6, Y6; \
	VFMADD231PS  Y6, Y4, ACC

// func q8RawDot4VNNI(x *byte, b *[4]*uint8, xd *[4]*float32, blocks int, out *float32)
//
// q8RawDot4AVX2 with AVX512-VNNI's VPDPBUSD on 256-bit registers, the
// inputs' levels given + 128 (unsigned): each block's lane sums are the
// same integers as VPSIGNB, VPMADDUBSW and VPMADDWD give, in one multiply
// step instead of three (the correction −128·Σw computed once per block
// for the four inputs), and the float steps are q8RawDot4AVX2's, so the
// results are its bits.
TEXT ·q8RawDot4VNNI(SB), NOSPLIT, $0-40
	MOVQ         x+0(FP), SI
	MOVQ         b+8(FP), AX
	MOVQ         0(AX), R8
	MOVQ         8(AX), R9
	MOVQ         16(AX), R10
	MOVQ         24(AX), R11
	MOVQ         xd+16(FP), AX
	MOVQ         0(AX), R12
	MOVQ         8(AX), R13
	MOVQ         16(AX), R14
	MOVQ         24(AX), R15
	MOVQ         blocks+24(FP), CX
	MOVQ         out+32(FP), DX
	VPBROADCASTD kmask80<>(SB), Y15
	VXORPS       Y8, Y8, Y8
	VXORPS       Y9, Y9, Y9
	VXORPS       Y10, Y10, Y10
	VXORPS       Y11, Y11, Y11
	XORQ         BX, BX

q8vloop:
	TESTQ        CX, CX
	JEQ          q8vdone
	VPBROADCASTW (SI), X5
	VCVTPH2PS    X5, Y7
	VMOVDQU      2(SI), Y0
	VPXOR        Y1, Y1, Y1
	VPDPBUSD     Y0, Y15, Y1
	VPXOR        Y12, Y12, Y12
	VPSUBD       Y1, Y12, Y12
	Q8VTOK((R8), (R12)(BX*4), Y8)
	Q8VTOK((R9), (R13)(BX*4), Y9)
	Q8VTOK((R10), (R14)(BX*4), Y10)
	Q8VTOK((R11), (R15)(BX*4), Y11)
	ADDQ         $34, SI
	ADDQ         $32, R8
	ADDQ         $32, R9
	ADDQ         $32, R10
	ADDQ         $32, R11
	INCQ         BX
	DECQ         CX
	JMP          q8vloop

q8vdone:
	HSUM4(Y8, Y9, Y10, Y11, X8, X9, (DX))
	VZEROUPPER
	RET

// One input's step of q8RawRows8VNNI: Q8VTOK with d·xd broadcast from the
// frame (OFF(SP)), computed there for the eight inputs by one VMULPS.
#define Q8VTOKF(B, OFF, ACC) \
	VMOVDQU      B, Y2; \
	VMOVDQU      Y12, Y4; \
	VPDPBUSD     Y0, Y2, Y4; \
	VCVTDQ2PS    Y4, Y4; \
	VBROADCASTSS OFF(SP), Y6; \
	VFMADD231PS  Y6, Y4, ACC

// The eight-token Q4_K kernel (AVX512-VNNI with AVX512VL, so Y16–Y31 are
// there): tokens 0–3 as q4kDot4AVX2's VNNI form (Y0–Y7), tokens 4–7 at R11
// = DI + 4·R8 with their float32 sums in Y16–Y19 and int32 sums in
// Y20–Y23, the same steps per token, so each token's product has the
// four-token kernel's bits; the levels split and the scales widened once
// per block serve eight tokens instead of four.

// Tokens 4–7's sums cleared (EVEX VPXORD: VPXOR has no form for Y16–Y31).
#define KZERO8 \
	VPXORD Y16, Y16, Y16; \
	VPXORD Y17, Y17, Y17; \
	VPXORD Y18, Y18, Y18; \
	VPXORD Y19, Y19, Y19; \
	VPXORD Y20, Y20, Y20; \
	VPXORD Y21, Y21, Y21; \
	VPXORD Y22, Y22, Y22; \
	VPXORD Y23, Y23, Y23

// The eight float32 sums Y0–Y3 and Y16–Y19 added across their lanes into
// (DX) and 16(DX) (VHADDPS has no form for Y16–Y31: moved down first).
#define KSTORE8 \
	KSTORE4; \
	VMOVUPS Y16, Y0; \
	VMOVUPS Y17, Y1; \
	VMOVUPS Y18, Y2; \
	VMOVUPS Y19, Y3; \
	ADDQ    $16, DX; \
	KSTORE4

// Q4TOKS4 for tokens 4–7.
#define Q4TOKS4H(A0, A1) \
	Q4TOKV(A0(R11), A1(R11), Y20); \
	Q4TOKV(A0(R11)(R8*1), A1(R11)(R8*1), Y21); \
	Q4TOKV(A0(R11)(R8*2), A1(R11)(R8*2), Y22); \
	Q4TOKV(A0(R11)(R9*1), A1(R11)(R9*1), Y23)

// Q4END for tokens 4–7 (EVEX VPXORD clears the upper registers).
#define Q4ENDH(D, BS, ACC, FACC) Q4ENDC(D, BS, ACC, FACC, VPXORD)

// func q4kDot8VNNI(x *byte, a *byte, astride int, blocks int, out *float32)
TEXT ·q4kDot8VNNI(SB), NOSPLIT, $48-40
	MOVQ   x+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   astride+16(FP), R8
	MOVQ   blocks+24(FP), CX
	MOVQ   out+32(FP), DX
	LEAQ   (R8)(R8*2), R9
	LEAQ   (DI)(R8*4), R11
	LEAQ   0(SP), R10
	KPROLOGUE
	KZERO8

q48block:
	TESTQ CX, CX
	JEQ   q48done
	Q4SCALES
	Q4SPLIT(16(SI), 0(R10), 2(R10))
	Q4TOKS4(Q4TOKV, 4, 36)
	Q4TOKS4H(4, 36)
	Q4SPLIT(48(SI), 4(R10), 6(R10))
	Q4TOKS4(Q4TOKV, 68, 100)
	Q4TOKS4H(68, 100)
	Q4SPLIT(80(SI), 8(R10), 10(R10))
	Q4TOKS4(Q4TOKV, 132, 164)
	Q4TOKS4H(132, 164)
	Q4SPLIT(112(SI), 12(R10), 14(R10))
	Q4TOKS4(Q4TOKV, 196, 228)
	Q4TOKS4H(196, 228)
	Q4D
	Q4END((DI), 260(DI), Y4, Y0)
	Q4END((DI)(R8*1), 260(DI)(R8*1), Y5, Y1)
	Q4END((DI)(R8*2), 260(DI)(R8*2), Y6, Y2)
	Q4END((DI)(R9*1), 260(DI)(R9*1), Y7, Y3)
	Q4ENDH((R11), 260(R11), Y20, Y16)
	Q4ENDH((R11)(R8*1), 260(R11)(R8*1), Y21, Y17)
	Q4ENDH((R11)(R8*2), 260(R11)(R8*2), Y22, Y18)
	Q4ENDH((R11)(R9*1), 260(R11)(R9*1), Y23, Y19)
	ADDQ  $144, SI
	ADDQ  $292, DI
	ADDQ  $292, R11
	DECQ  CX
	JMP   q48block

q48done:
	KSTORE8
	VZEROUPPER
	RET

// The eight-token Q6_K kernel, as q4kDot8VNNI: tokens 4–7 at R11 with
// Y16–Y19 (float32) and Y20–Y23 (int32), each token's steps those of
// q6kDot4AVX2's VNNI form.

// The VNNI token step for the eight tokens, their levels at A of each.
#define TOKS8(A) \
	TOKS4(Q6TOKV, A); \
	Q6TOKV(A(R11), Y20); \
	Q6TOKV(A(R11)(R8*1), Y21); \
	Q6TOKV(A(R11)(R8*2), Y22); \
	Q6TOKV(A(R11)(R9*1), Y23)

// Q6HALF4 for eight tokens.
#define Q6HALF8(QL0, QL1, QH, S0, S1, S2, S3, S4, S5, S6, S7, A0, A1, A2, A3) \
	Q6L0(QL0, QH); \
	Q6SC(S0, S1); \
	TOKS8(A0); \
	Q6L1(QL1, QH); \
	Q6SC(S2, S3); \
	TOKS8(A1); \
	Q6L2(QL0, QH); \
	Q6SC(S4, S5); \
	TOKS8(A2); \
	Q6L3(QL1, QH); \
	Q6SC(S6, S7); \
	TOKS8(A3)

// Q6END for tokens 4–7 (EVEX VPXORD clears the upper registers).
#define Q6ENDH(D, BS, ACC, FACC) Q6ENDC(D, BS, ACC, FACC, VPXORD)

// func q6kDot8VNNI(x *byte, a *byte, astride int, blocks int, out *float32)
TEXT ·q6kDot8VNNI(SB), NOSPLIT, $32-40
	MOVQ   x+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   astride+16(FP), R8
	MOVQ   blocks+24(FP), CX
	MOVQ   out+32(FP), DX
	LEAQ   (R8)(R8*2), R9
	LEAQ   (DI)(R8*4), R11
	LEAQ   0(SP), R10
	Q6PROLOGUE
	KZERO8

q68block:
	TESTQ CX, CX
	JEQ   q68done
	Q6SCALES
	Q6HALF8(0(SI), 32(SI), 128(SI), 0(R10), 2(R10), 4(R10), 6(R10), 8(R10), 10(R10), 12(R10), 14(R10), 4, 36, 68, 100)
	Q6HALF8(64(SI), 96(SI), 160(SI), 16(R10), 18(R10), 20(R10), 22(R10), 24(R10), 26(R10), 28(R10), 30(R10), 132, 164, 196, 228)
	Q6END((DI), 260(DI), Y4, Y0)
	Q6END((DI)(R8*1), 260(DI)(R8*1), Y5, Y1)
	Q6END((DI)(R8*2), 260(DI)(R8*2), Y6, Y2)
	Q6END((DI)(R9*1), 260(DI)(R9*1), Y7, Y3)
	Q6ENDH((R11), 260(R11), Y20, Y16)
	Q6ENDH((R11)(R8*1), 260(R11)(R8*1), Y21, Y17)
	Q6ENDH((R11)(R8*2), 260(R11)(R8*2), Y22, Y18)
	Q6ENDH((R11)(R9*1), 260(R11)(R9*1), Y23, Y19)
	ADDQ  $210, SI
	ADDQ  $292, DI
	ADDQ  $292, R11
	DECQ  CX
	JMP   q68block

q68done:
	KSTORE8
	VZEROUPPER
	RET

// func q8RawRows8VNNI(x *byte, b *[8]*uint8, xd8 *float32, blocks, rows int, out *float32)
//
// out[8r+t] = q8RawDot4VNNI's product of row r of x (rows of blocks Q8_0
// blocks, one after the other) with input t of eight: a tile of rows by
// eight inputs in one call. xd8 holds the inputs' scales eight by eight per
// block, so one VMULPS gives the block's eight products d·xd (the same
// float32 products as q8RawDot4VNNI's), broadcast from the frame to each
// input's FMA; inputs 4–7 are summed in Y16–Y19. Each input's steps are
// q8RawDot4VNNI's, so the results are its bits; the block's levels,
// correction and d serve eight inputs.
TEXT ·q8RawRows8VNNI(SB), NOSPLIT, $32-48
	MOVQ         x+0(FP), SI
	MOVQ         rows+32(FP), R13
	MOVQ         out+40(FP), DX
	VPBROADCASTD kmask80<>(SB), Y15

q88row:
	TESTQ  R13, R13
	JEQ    q88done
	MOVQ   b+8(FP), AX
	MOVQ   0(AX), R8
	MOVQ   8(AX), R9
	MOVQ   16(AX), R10
	MOVQ   24(AX), R11
	MOVQ   32(AX), R12
	MOVQ   40(AX), R14
	MOVQ   48(AX), R15
	MOVQ   56(AX), BX
	MOVQ   xd8+16(FP), DI
	MOVQ   blocks+24(FP), CX
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VPXORD Y16, Y16, Y16
	VPXORD Y17, Y17, Y17
	VPXORD Y18, Y18, Y18
	VPXORD Y19, Y19, Y19

q88loop:
	TESTQ        CX, CX
	JEQ          q88end
	VPBROADCASTW (SI), X5
	VCVTPH2PS    X5, Y7
	VMULPS       (DI), Y7, Y6
	VMOVUPS      Y6, 0(SP)
	VMOVDQU      2(SI), Y0
	VPXOR        Y1, Y1, Y1
	VPDPBUSD     Y0, Y15, Y1
	VPXOR        Y12, Y12, Y12
	VPSUBD       Y1, Y12, Y12
	Q8VTOKF((R8), 0, Y8)
	Q8VTOKF((R9), 4, Y9)
	Q8VTOKF((R10), 8, Y10)
	Q8VTOKF((R11), 12, Y11)
	Q8VTOKF((R12), 16, Y16)
	Q8VTOKF((R14), 20, Y17)
	Q8VTOKF((R15), 24, Y18)
	Q8VTOKF((BX), 28, Y19)
	ADDQ         $34, SI
	ADDQ         $32, R8
	ADDQ         $32, R9
	ADDQ         $32, R10
	ADDQ         $32, R11
	ADDQ         $32, R12
	ADDQ         $32, R14
	ADDQ         $32, R15
	ADDQ         $32, BX
	ADDQ         $32, DI
	DECQ         CX
	JMP          q88loop

q88end:
	HSUM4(Y8, Y9, Y10, Y11, X8, X9, (DX))
	VMOVUPS Y16, Y8
	VMOVUPS Y17, Y9
	VMOVUPS Y18, Y10
	VMOVUPS Y19, Y11
	HSUM4(Y8, Y9, Y10, Y11, X8, X9, 16(DX))
	ADDQ    $32, DX
	DECQ    R13
	JMP     q88row

q88done:
	VZEROUPPER
	RET
