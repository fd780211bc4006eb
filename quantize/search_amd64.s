//go:build !purego

#include "textflag.h"

DATA absmask<>+0(SB)/4, $0x7fffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $4

DATA lim22<>+0(SB)/4, $0x4a800000 // 2^22
GLOBL lim22<>(SB), RODATA|NOPTR, $4

// func qxTrialsAVX2(x, w, wx *float32, n int, iscale *[24]float32, lohi *[2]float32, sums *[48]float32)
//
// The sums of make_qx_quants' trials, trial k in lane k of three 8-float
// vectors (Y0-Y2 the inverse scales). For each value, in index order: the
// level RoundToEven(iscale·x) clamped to [lo, hi], then sumlx += wx·l and
// suml2 += (w·l)·l, each product its own VMULPS (no FMA), each sum its own
// VADDPS. sums receives sumlx[24] then suml2[24].
TEXT ·qxTrialsAVX2(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), R8
	MOVQ wx+16(FP), R9
	MOVQ n+24(FP), CX
	MOVQ iscale+32(FP), AX
	MOVQ lohi+40(FP), BX
	MOVQ sums+48(FP), DX
	VMOVUPS      (AX), Y0
	VMOVUPS      32(AX), Y1
	VMOVUPS      64(AX), Y2
	VBROADCASTSS (BX), Y3      // lo
	VBROADCASTSS 4(BX), Y4     // hi
	VXORPS       Y5, Y5, Y5    // sumlx, trials 0-7
	VXORPS       Y6, Y6, Y6    // sumlx, trials 8-15
	VXORPS       Y7, Y7, Y7    // sumlx, trials 16-23
	VXORPS       Y8, Y8, Y8    // suml2, trials 0-7
	VXORPS       Y9, Y9, Y9    // suml2, trials 8-15
	VXORPS       Y10, Y10, Y10 // suml2, trials 16-23
	XORQ         DI, DI

qxloop:
	VBROADCASTSS (SI)(DI*4), Y11 // x
	VBROADCASTSS (R9)(DI*4), Y12 // wx
	VBROADCASTSS (R8)(DI*4), Y13 // w

	VMULPS   Y11, Y0, Y14
	VROUNDPS $0, Y14, Y14
	VMINPS   Y4, Y14, Y14
	VMAXPS   Y3, Y14, Y14
	VMULPS   Y14, Y12, Y15
	VADDPS   Y15, Y5, Y5
	VMULPS   Y14, Y13, Y15
	VMULPS   Y14, Y15, Y15
	VADDPS   Y15, Y8, Y8

	VMULPS   Y11, Y1, Y14
	VROUNDPS $0, Y14, Y14
	VMINPS   Y4, Y14, Y14
	VMAXPS   Y3, Y14, Y14
	VMULPS   Y14, Y12, Y15
	VADDPS   Y15, Y6, Y6
	VMULPS   Y14, Y13, Y15
	VMULPS   Y14, Y15, Y15
	VADDPS   Y15, Y9, Y9

	VMULPS   Y11, Y2, Y14
	VROUNDPS $0, Y14, Y14
	VMINPS   Y4, Y14, Y14
	VMAXPS   Y3, Y14, Y14
	VMULPS   Y14, Y12, Y15
	VADDPS   Y15, Y7, Y7
	VMULPS   Y14, Y13, Y15
	VMULPS   Y14, Y15, Y15
	VADDPS   Y15, Y10, Y10

	INCQ DI
	CMPQ DI, CX
	JLT  qxloop

	VMOVUPS Y5, (DX)
	VMOVUPS Y6, 32(DX)
	VMOVUPS Y7, 64(DX)
	VMOVUPS Y8, 96(DX)
	VMOVUPS Y9, 128(DX)
	VMOVUPS Y10, 160(DX)
	VZEROUPPER
	RET

// Offsets in qkx8State: x, w, cur and best are [32][8]float32 (value i of
// group j at [i][j]), then the per-group vectors.
#define QX 0
#define QW 1024
#define QCUR 2048
#define QBEST 3072
#define QMIN 4096
#define QMAX 4128
#define QSUMW 4160
#define QSUMX 4192
#define QERR 4224
#define QSCALE 4256
#define QDONE 4288

// 0..7, times n the offsets of eight groups of n values.
DATA lanes<>+0(SB)/4, $0
DATA lanes<>+4(SB)/4, $1
DATA lanes<>+8(SB)/4, $2
DATA lanes<>+12(SB)/4, $3
DATA lanes<>+16(SB)/4, $4
DATA lanes<>+20(SB)/4, $5
DATA lanes<>+24(SB)/4, $6
DATA lanes<>+28(SB)/4, $7
GLOBL lanes<>(SB), RODATA|NOPTR, $32

DATA one<>+0(SB)/4, $0x3f800000 // 1.0
GLOBL one<>(SB), RODATA|NOPTR, $4


// func qkx8AVX2(x, w *float32, n int, s *qkx8State, nums *float32, ntrials int, nmax float32, mad bool) bool
//
// make_qkx2_quants for eight groups of n values (n ≤ 32) that follow each
// other at x, weights w in the same layout, with the absolute error when
// mad is set and else the squared one, group j in lane j: each lane runs ggml's
// scalar operations in ggml's order, every product its own VMULPS (no
// FMA), the quotients VDIVPS, min and max as ggml's `if (x < min) min = x`
// (VMINPS returns its second operand, the old min, unless x < min). First
// the start (range, Σw, Σw·x, the levels and error of nmax/(max - min)),
// then trial is with the inverse scale nums[is]/(max - min), min being the
// lane's min of the last accepted fit. A group with max == min is marked in
// s.done and computed with a range of 1 (its values equal min, so its
// levels are 0 and it accepts no fit); its results are dropped. The result
// is false when some iscale·(x-min) was not below 2^22 in magnitude (or
// NaN), where RoundToEven is not nearest_int: s is then not to be used.
TEXT ·qkx8AVX2(SB), NOSPLIT, $0-57
	MOVQ         x+0(FP), R8
	MOVQ         w+8(FP), R9
	MOVQ         n+16(FP), R10
	MOVQ         s+24(FP), DI
	MOVQ         nums+32(FP), SI
	MOVQ         ntrials+40(FP), CX
	VBROADCASTSS nmax+48(FP), Y15
	MOVBQZX      mad+52(FP), R11
	VXORPS       Y14, Y14, Y14
	VBROADCASTSS lim22<>(SB), Y13
	VBROADCASTSS absmask<>(SB), Y12
	VPCMPEQD     Y11, Y11, Y11 // all values in range so far

	// Transpose x and w into s.x and s.w.
	MOVQ         R10, X0
	VPBROADCASTD X0, Y0
	VPMULLD      lanes<>(SB), Y0, Y10 // group offsets 0, n, …, 7n
	SHLQ         $5, R10              // n·32, the end of the [i] rows
	XORQ         AX, AX

gather:
	VPCMPEQD   Y1, Y1, Y1
	VGATHERDPS Y1, (R8)(Y10*4), Y0
	VMOVUPS    Y0, QX(DI)(AX*1)
	VPCMPEQD   Y1, Y1, Y1
	VGATHERDPS Y1, (R9)(Y10*4), Y0
	VMOVUPS    Y0, QW(DI)(AX*1)
	ADDQ       $4, R8
	ADDQ       $4, R9
	ADDQ       $32, AX
	CMPQ       AX, R10
	JLT        gather

	// min, max, Σw, Σw·x.
	VMOVUPS QX(DI), Y0
	VMOVUPS QW(DI), Y4
	VMOVAPS Y0, Y2             // min
	VMOVAPS Y0, Y3             // max
	VMULPS  Y0, Y4, Y5         // sum_x
	MOVQ    $32, AX

sums:
	VMOVUPS QX(DI)(AX*1), Y0
	VMOVUPS QW(DI)(AX*1), Y1
	VMINPS  Y2, Y0, Y2
	VMAXPS  Y3, Y0, Y3
	VADDPS  Y1, Y4, Y4
	VMULPS  Y0, Y1, Y1
	VADDPS  Y1, Y5, Y5
	ADDQ    $32, AX
	CMPQ    AX, R10
	JLT     sums

	VCMPPS       $0x1e, Y14, Y2, Y0 // min > 0
	VANDNPS      Y2, Y0, Y2         // min = 0
	VCMPPS       $0, Y2, Y3, Y1     // max == min
	VMOVUPS      Y1, QDONE(DI)
	VMOVUPS      Y2, QMIN(DI)
	VMOVUPS      Y3, QMAX(DI)
	VMOVUPS      Y4, QSUMW(DI)
	VMOVUPS      Y5, QSUMX(DI)
	VSUBPS       Y2, Y3, Y0         // max - min
	VBROADCASTSS one<>(SB), Y6
	VBLENDVPS    Y1, Y6, Y0, Y0
	VDIVPS       Y0, Y15, Y10       // iscale = nmax/(max - min)
	VDIVPS       Y10, Y6, Y3        // scale = 1/iscale
	VMOVUPS      Y3, QSCALE(DI)
	VXORPS       Y7, Y7, Y7         // best_error
	XORQ         AX, AX

start:
	VMOVUPS  QX(DI)(AX*1), Y0
	VSUBPS   Y2, Y0, Y1
	VMULPS   Y1, Y10, Y1
	VANDPS   Y12, Y1, Y4
	VCMPPS   $0x11, Y13, Y4, Y4
	VANDPS   Y4, Y11, Y11
	VROUNDPS $0, Y1, Y1
	VMINPS   Y15, Y1, Y1
	VMAXPS   Y14, Y1, Y1
	VMOVUPS  Y1, QBEST(DI)(AX*1)
	VMULPS   Y1, Y3, Y5            // scale·l
	VADDPS   Y2, Y5, Y5            // + min
	VSUBPS   Y0, Y5, Y5            // - x
	TESTQ    R11, R11
	JNZ      startmad
	VMULPS   Y5, Y5, Y5
	JMP      startw

startmad:
	VANDPS Y12, Y5, Y5

startw:
	VMULPS   QW(DI)(AX*1), Y5, Y5
	VADDPS   Y5, Y7, Y7
	ADDQ     $32, AX
	CMPQ     AX, R10
	JLT      start
	VMOVUPS  Y7, QERR(DI)

trial:
	VMOVUPS      QMIN(DI), Y9
	VMOVUPS      QMAX(DI), Y0
	VSUBPS       Y9, Y0, Y0    // max - min
	VMOVUPS      QDONE(DI), Y2
	VBROADCASTSS one<>(SB), Y1
	VBLENDVPS    Y2, Y1, Y0, Y0
	VBROADCASTSS (SI), Y1
	VDIVPS       Y0, Y1, Y10   // iscale
	VXORPS       Y6, Y6, Y6    // sum_l
	VXORPS       Y7, Y7, Y7    // sum_l2
	VXORPS       Y8, Y8, Y8    // sum_xl
	XORQ         AX, AX
levels:
	VMOVUPS  QX(DI)(AX*1), Y0
	VSUBPS   Y9, Y0, Y1        // x - min
	VMULPS   Y1, Y10, Y1       // t = iscale·(x - min)
	VANDPS   Y12, Y1, Y2
	VCMPPS   $0x11, Y13, Y2, Y2 // |t| < 2^22 (false for NaN)
	VANDPS   Y2, Y11, Y11
	VROUNDPS $0, Y1, Y1
	VMINPS   Y15, Y1, Y1       // MIN(nmax, l)
	VMAXPS   Y14, Y1, Y1       // MAX(0, l), +0 for -0
	VMOVUPS  Y1, QCUR(DI)(AX*1)
	VMULPS   QW(DI)(AX*1), Y1, Y2 // w·l
	VADDPS   Y2, Y6, Y6
	VMULPS   Y1, Y2, Y3        // w·l·l
	VADDPS   Y3, Y7, Y7
	VMULPS   Y0, Y2, Y3        // w·l·x
	VADDPS   Y3, Y8, Y8
	ADDQ     $32, AX
	CMPQ     AX, R10
	JLT      levels

	VMOVUPS QSUMW(DI), Y0
	VMOVUPS QSUMX(DI), Y1
	VMULPS  Y7, Y0, Y2         // sum_w·sum_l2
	VMULPS  Y6, Y6, Y3         // sum_l·sum_l
	VSUBPS  Y3, Y2, Y2         // D
	VMULPS  Y8, Y0, Y3         // sum_w·sum_xl
	VMULPS  Y6, Y1, Y4         // sum_x·sum_l
	VSUBPS  Y4, Y3, Y3
	VDIVPS  Y2, Y3, Y3         // this_scale
	VMULPS  Y1, Y7, Y4         // sum_l2·sum_x
	VMULPS  Y8, Y6, Y5         // sum_l·sum_xl
	VSUBPS  Y5, Y4, Y4
	VDIVPS  Y2, Y4, Y4         // this_min
	VCMPPS  $0x1e, Y14, Y2, Y2 // D > 0
	VCMPPS  $0x1e, Y14, Y4, Y5 // this_min > 0
	VDIVPS  Y7, Y8, Y0         // sum_xl/sum_l2
	VBLENDVPS Y5, Y0, Y3, Y3   // this_scale
	VANDNPS Y4, Y5, Y4         // this_min = 0

	VXORPS Y0, Y0, Y0          // cur_error
	XORQ   AX, AX

errs:
	VMOVUPS QCUR(DI)(AX*1), Y1
	VMULPS  Y1, Y3, Y5         // this_scale·l
	VADDPS  Y4, Y5, Y5         // + this_min
	VSUBPS  QX(DI)(AX*1), Y5, Y5 // - x
	TESTQ   R11, R11
	JNZ     errmad
	VMULPS  Y5, Y5, Y5         // diff·diff
	JMP     errw

errmad:
	VANDPS Y12, Y5, Y5         // |diff|

errw:
	VMULPS  QW(DI)(AX*1), Y5, Y5 // w·diff
	VADDPS  Y5, Y0, Y0
	ADDQ    $32, AX
	CMPQ    AX, R10
	JLT     errs

	VMOVUPS   QERR(DI), Y1
	VCMPPS    $0x11, Y1, Y0, Y5 // cur_error < best_error
	VANDPS    Y2, Y5, Y5
	VMOVMSKPS Y5, BX
	TESTL     BX, BX
	JEQ       next
	VBLENDVPS Y5, Y0, Y1, Y1
	VMOVUPS   Y1, QERR(DI)
	VMOVUPS   QSCALE(DI), Y1
	VBLENDVPS Y5, Y3, Y1, Y1
	VMOVUPS   Y1, QSCALE(DI)
	VBLENDVPS Y5, Y4, Y9, Y9
	VMOVUPS   Y9, QMIN(DI)
	XORQ      AX, AX

copybest:
	VMOVUPS   QBEST(DI)(AX*1), Y1
	VBLENDVPS Y5, QCUR(DI)(AX*1), Y1, Y1
	VMOVUPS   Y1, QBEST(DI)(AX*1)
	ADDQ      $32, AX
	CMPQ      AX, R10
	JLT       copybest

next:
	ADDQ $4, SI
	DECQ CX
	JNZ  trial

	VMOVMSKPS Y11, AX
	CMPL      AX, $0xff
	SETEQ     ret+56(FP)
	VZEROUPPER
	RET

// Offsets in qx8State: x, w, wx ([32][8]float32, value i of group j at
// [i][j]) and the levels ([32][8]int32), then per group the scale and a
// mask of the all-zero groups.
#define SX 0
#define SW 1024
#define SWX 2048
#define SL 3072
#define SSCALE 4096
#define SZERO 4128


DATA groupeps<>+0(SB)/4, $0x26901d7d // 1e-15, GROUP_MAX_EPS
GLOBL groupeps<>(SB), RODATA|NOPTR, $4

// func qx8AVX2(x, w *float32, n int, nums *[19]float32, lohi *[2]float32, s *qx8State)
//
// make_qx_quants (rmse_type 1) for eight groups of n values (n ≤ 32) that
// follow each other at x, weights w in the same layout (nil: x²), group j
// in lane j, each lane doing ggml's scalar operations in ggml's order with
// every product its own VMULPS (no FMA). max is the value of largest
// magnitude, the first one on ties (ggml's strict >). Trial k has the
// inverse scale nums[k]/max (nums[0] = -nmax, then -(nmax + 0.1·is) for
// is = -9..9 without 0); levels are RoundToEven(t) clamped to lohi, which
// is nearest_int's result since |t| ≤ nmax+1 (a -0 in place of nearest_int's
// 0 leaves every sum unchanged). s receives the levels of the chosen trial
// (without the offset nmax), the scales, and the mask of the groups whose
// max is below GROUP_MAX_EPS (computed with max 1, their results dropped).
TEXT ·qx8AVX2(SB), NOSPLIT, $0-48
	MOVQ         x+0(FP), R8
	MOVQ         w+8(FP), R9
	MOVQ         n+16(FP), R10
	MOVQ         nums+24(FP), SI
	MOVQ         lohi+32(FP), BX
	MOVQ         s+40(FP), DI
	VBROADCASTSS (BX), Y15
	VBROADCASTSS 4(BX), Y14
	VXORPS       Y6, Y6, Y6
	VBROADCASTSS absmask<>(SB), Y12
	MOVQ         R10, AX
	MOVQ         AX, X0
	VPBROADCASTD X0, Y0
	VPMULLD      lanes<>(SB), Y0, Y11 // group offsets 0, n, …, 7n
	SHLQ         $5, R10              // n·32, the end of the [i] rows
	VXORPS       Y13, Y13, Y13        // max
	VXORPS       Y10, Y10, Y10        // amax
	XORQ         AX, AX

prep:
	VPCMPEQD   Y2, Y2, Y2
	VGATHERDPS Y2, (R8)(Y11*4), Y0
	VMOVUPS    Y0, SX(DI)(AX*1)
	TESTQ      R9, R9
	JZ         squares
	VPCMPEQD   Y2, Y2, Y2
	VGATHERDPS Y2, (R9)(Y11*4), Y1
	ADDQ       $4, R9
	JMP        weighted

squares:
	VMULPS Y0, Y0, Y1

weighted:
	VMOVUPS   Y1, SW(DI)(AX*1)
	VMULPS    Y0, Y1, Y1            // w·x
	VMOVUPS   Y1, SWX(DI)(AX*1)
	VANDPS    Y12, Y0, Y2           // |x|
	VCMPPS    $0x1e, Y10, Y2, Y3    // |x| > amax
	VBLENDVPS Y3, Y2, Y10, Y10
	VBLENDVPS Y3, Y0, Y13, Y13
	ADDQ      $4, R8
	ADDQ      $32, AX
	CMPQ      AX, R10
	JLT       prep

	VBROADCASTSS groupeps<>(SB), Y0
	VCMPPS       $0x11, Y0, Y10, Y1 // amax < GROUP_MAX_EPS
	VMOVUPS      Y1, SZERO(DI)
	VBROADCASTSS one<>(SB), Y0
	VBLENDVPS    Y1, Y0, Y13, Y13
	XORQ         BX, BX

qxtrial:
	VBROADCASTSS (SI)(BX*4), Y0
	VDIVPS       Y13, Y0, Y9 // iscale
	VXORPS       Y7, Y7, Y7  // sumlx
	VXORPS       Y8, Y8, Y8  // suml2
	XORQ         AX, AX

qxsums:
	VMULPS   SX(DI)(AX*1), Y9, Y0
	VROUNDPS $0, Y0, Y0
	VMINPS   Y14, Y0, Y0
	VMAXPS   Y15, Y0, Y0
	VMULPS   SWX(DI)(AX*1), Y0, Y1
	VADDPS   Y1, Y7, Y7
	VMULPS   SW(DI)(AX*1), Y0, Y1
	VMULPS   Y0, Y1, Y1
	VADDPS   Y1, Y8, Y8
	ADDQ     $32, AX
	CMPQ     AX, R10
	JLT      qxsums

	VDIVPS Y8, Y7, Y2 // sumlx/suml2
	TESTQ  BX, BX
	JNZ    qxchoose
	VCMPPS  $0, Y6, Y8, Y3 // suml2 == 0
	VANDNPS Y2, Y3, Y11    // scale
	VMULPS  Y7, Y11, Y12   // best = scale·sumlx
	VMOVAPS Y9, Y10        // chosen iscale
	JMP     qxnext

qxchoose:
	VCMPPS    $0x1e, Y6, Y8, Y3  // suml2 > 0
	VMULPS    Y7, Y7, Y4         // sumlx·sumlx
	VMULPS    Y8, Y12, Y5        // best·suml2
	VCMPPS    $0x1e, Y5, Y4, Y4
	VANDPS    Y4, Y3, Y3
	VBLENDVPS Y3, Y2, Y11, Y11
	VMULPS    Y7, Y2, Y4
	VBLENDVPS Y3, Y4, Y12, Y12
	VBLENDVPS Y3, Y9, Y10, Y10

qxnext:
	INCQ BX
	CMPQ BX, $19
	JLT  qxtrial

	VMOVUPS Y11, SSCALE(DI)
	XORQ    AX, AX

qxfill:
	VMULPS    SX(DI)(AX*1), Y10, Y0
	VROUNDPS  $0, Y0, Y0
	VMINPS    Y14, Y0, Y0
	VMAXPS    Y15, Y0, Y0
	VCVTTPS2DQ Y0, Y0
	VMOVDQU   Y0, SL(DI)(AX*1)
	ADDQ      $32, AX
	CMPQ      AX, R10
	JLT       qxfill
	VZEROUPPER
	RET

// Offsets in q3x8State: x, w = x², wx = w·x and the levels L as floats
// ([16][8]float32, value i of group j at [i][j]), the levels as int32,
// then per group the scale and a mask of the all-zero groups.
#define TX 0
#define TW 512
#define TWX 1024
#define TL 1536
#define TLI 2048
#define TSCALE 2560
#define TZERO 2592

DATA absmask8<>+0(SB)/4, $0x7fffffff
DATA absmask8<>+4(SB)/4, $0x7fffffff
DATA absmask8<>+8(SB)/4, $0x7fffffff
DATA absmask8<>+12(SB)/4, $0x7fffffff
DATA absmask8<>+16(SB)/4, $0x7fffffff
DATA absmask8<>+20(SB)/4, $0x7fffffff
DATA absmask8<>+24(SB)/4, $0x7fffffff
DATA absmask8<>+28(SB)/4, $0x7fffffff
GLOBL absmask8<>(SB), RODATA|NOPTR, $32

// func q3x8AVX2(x *float32, s *q3x8State, nmax float32) bool
//
// make_q3_quants (do_rmse set, weights x²) for the eight groups of 16 that
// follow each other at x, group j in lane j, each lane doing ggml's scalar
// operations in ggml's order with every product its own VMULPS (no FMA):
// the levels of -nmax/max (max the value of largest magnitude, the first
// on ties), then up to five rounds over the values, each moving a level to
// nearest_int(x·sl2/slx) when that improves the fit. The rounds go on
// while some lane changes a level; a round that changes nothing in a lane
// leaves it as it is, as ggml's early exit does. Groups below GROUP_MAX_EPS
// run with max 1, their results dropped. The result is false when some
// x·sl2/slx that ggml rounds was not below 2^22 in magnitude (or NaN),
// where RoundToEven is not nearest_int: s is then not to be used.
TEXT ·q3x8AVX2(SB), NOSPLIT, $0-25
	MOVQ         x+0(FP), R8
	MOVQ         s+8(FP), DI
	VBROADCASTSS nmax+16(FP), Y14
	VXORPS       Y13, Y13, Y13
	VSUBPS       Y14, Y13, Y15 // lo = -nmax
	VBROADCASTSS one<>(SB), Y0
	VSUBPS       Y0, Y14, Y14  // hi = nmax - 1
	VBROADCASTSS lim22<>(SB), Y12
	VXORPS       Y10, Y10, Y10 // out-of-range values seen
	MOVQ         $16, AX
	MOVQ         AX, X0
	VPBROADCASTD X0, Y0
	VPMULLD      lanes<>(SB), Y0, Y11 // group offsets 0, 16, …, 112
	VXORPS       Y5, Y5, Y5           // max
	VXORPS       Y6, Y6, Y6           // amax
	XORQ         AX, AX

q3prep:
	VPCMPEQD   Y2, Y2, Y2
	VGATHERDPS Y2, (R8)(Y11*4), Y0
	VMOVUPS    Y0, TX(DI)(AX*1)
	VMULPS     Y0, Y0, Y1            // w = x·x
	VMOVUPS    Y1, TW(DI)(AX*1)
	VMULPS     Y0, Y1, Y1            // w·x
	VMOVUPS    Y1, TWX(DI)(AX*1)
	VANDPS     absmask8<>(SB), Y0, Y2
	VCMPPS     $0x1e, Y6, Y2, Y3     // |x| > amax
	VBLENDVPS  Y3, Y2, Y6, Y6
	VBLENDVPS  Y3, Y0, Y5, Y5
	ADDQ       $4, R8
	ADDQ       $32, AX
	CMPQ       AX, $512
	JLT        q3prep

	VBROADCASTSS groupeps<>(SB), Y0
	VCMPPS       $0x11, Y0, Y6, Y1 // amax < GROUP_MAX_EPS
	VMOVUPS      Y1, TZERO(DI)
	VBROADCASTSS one<>(SB), Y0
	VBLENDVPS    Y1, Y0, Y5, Y5
	VDIVPS       Y5, Y15, Y9       // iscale = -nmax/max
	VXORPS       Y0, Y0, Y0        // sumlx
	VXORPS       Y1, Y1, Y1        // suml2
	XORQ         AX, AX

q3start:
	VMULPS   TX(DI)(AX*1), Y9, Y3
	VROUNDPS $0, Y3, Y3
	VMINPS   Y14, Y3, Y3
	VMAXPS   Y15, Y3, Y3
	VMOVUPS  Y3, TL(DI)(AX*1)
	VMULPS   TWX(DI)(AX*1), Y3, Y4 // w·x·l
	VADDPS   Y4, Y0, Y0
	VMULPS   TW(DI)(AX*1), Y3, Y4  // w·l·l
	VMULPS   Y3, Y4, Y4
	VADDPS   Y4, Y1, Y1
	ADDQ     $32, AX
	CMPQ     AX, $512
	JLT      q3start

	MOVQ $5, CX

q3round:
	VXORPS Y2, Y2, Y2 // levels changed in this round
	XORQ   AX, AX

q3value:
	VMOVUPS   TL(DI)(AX*1), Y11      // l
	VMULPS    TWX(DI)(AX*1), Y11, Y3
	VSUBPS    Y3, Y0, Y3             // slx = sumlx - w·x·l
	VCMPPS    $0x1e, Y13, Y3, Y4     // slx > 0
	VMULPS    TW(DI)(AX*1), Y11, Y5
	VMULPS    Y11, Y5, Y5
	VSUBPS    Y5, Y1, Y5             // sl2 = suml2 - w·l·l
	VMULPS    TX(DI)(AX*1), Y5, Y6   // x·sl2
	VDIVPS    Y3, Y6, Y6             // / slx
	VANDPS    absmask8<>(SB), Y6, Y7
	VCMPPS    $0x11, Y12, Y7, Y7     // in range
	VANDNPS   Y4, Y7, Y7             // out of range where it counts
	VORPS     Y7, Y10, Y10
	VROUNDPS  $0, Y6, Y6
	VMINPS    Y14, Y6, Y6
	VMAXPS    Y15, Y6, Y6            // new_l
	VCMPPS    $4, Y11, Y6, Y7        // new_l != l
	VANDPS    Y7, Y4, Y4
	VMULPS    TWX(DI)(AX*1), Y6, Y7
	VADDPS    Y7, Y3, Y3             // slx += w·x·new_l
	VMULPS    TW(DI)(AX*1), Y6, Y7
	VMULPS    Y6, Y7, Y7
	VADDPS    Y7, Y5, Y5             // sl2 += w·new_l·new_l
	VCMPPS    $0x1e, Y13, Y5, Y7     // sl2 > 0
	VANDPS    Y7, Y4, Y4
	VMULPS    Y3, Y3, Y7
	VMULPS    Y1, Y7, Y7             // slx·slx·suml2
	VMULPS    Y0, Y0, Y8
	VMULPS    Y5, Y8, Y8             // sumlx·sumlx·sl2
	VCMPPS    $0x1e, Y8, Y7, Y7
	VANDPS    Y7, Y4, Y4             // accepted
	VBLENDVPS Y4, Y6, Y11, Y11
	VMOVUPS   Y11, TL(DI)(AX*1)
	VBLENDVPS Y4, Y3, Y0, Y0
	VBLENDVPS Y4, Y5, Y1, Y1
	VORPS     Y4, Y2, Y2
	ADDQ      $32, AX
	CMPQ      AX, $512
	JLT       q3value

	VPTEST Y2, Y2
	JZ     q3done
	DECQ   CX
	JNZ    q3round

q3done:
	VDIVPS  Y1, Y0, Y3
	VCMPPS  $0x1e, Y13, Y1, Y4 // suml2 > 0
	VANDPS  Y4, Y3, Y3
	VMOVUPS Y3, TSCALE(DI)
	XORQ    AX, AX

q3out:
	VCVTTPS2DQ TL(DI)(AX*1), Y3
	VMOVDQU    Y3, TLI(DI)(AX*1)
	ADDQ       $32, AX
	CMPQ       AX, $512
	JLT        q3out
	VPTEST     Y10, Y10
	SETEQ      ret+24(FP)
	VZEROUPPER
	RET
