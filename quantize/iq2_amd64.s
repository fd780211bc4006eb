//go:build !purego

#include "textflag.h"

DATA iq2lanes<>+0(SB)/4, $0
DATA iq2lanes<>+4(SB)/4, $1
DATA iq2lanes<>+8(SB)/4, $2
DATA iq2lanes<>+12(SB)/4, $3
DATA iq2lanes<>+16(SB)/4, $4
DATA iq2lanes<>+20(SB)/4, $5
DATA iq2lanes<>+24(SB)/4, $6
DATA iq2lanes<>+28(SB)/4, $7
DATA iq2lanes<>+32(SB)/4, $8          // lane step
DATA iq2lanes<>+36(SB)/4, $0x7f7fffff // FLT_MAX
DATA iq2lanes<>+40(SB)/4, $0x7fffffff // INT32_MAX
DATA iq2lanes<>+44(SB)/4, $0x3f800000 // 1.0
DATA iq2lanes<>+48(SB)/4, $0x3f000000 // 0.5
DATA iq2lanes<>+52(SB)/4, $0x4a800000 // 2^22
DATA iq2lanes<>+56(SB)/4, $1
DATA iq2lanes<>+60(SB)/4, $2
GLOBL iq2lanes<>(SB), RODATA|NOPTR, $64

// The neighbour searches: lanes are list positions p .. p+7, the packed
// points loaded as dwords into Y0. NEAREST_START sets Y14 (best distance
// per lane, FLT_MAX), Y13 (its position, -1 for none), Y12 (the lanes'
// positions), Y11 (n) and Y10 (8) from CX = n. NEAREST_TERM0 and
// NEAREST_TERM add coordinate i's term (w[i]·e)·e, e = sv[level] − x[i], to
// the lane's distance Y4 in index order (the first term starts it: ggml's
// 0 + p0 differs only by turning -0 into +0, which compares the same); the
// level is bits sh.. of the point, which VPERMPS reads through the table
// Y15 from their low three bits. NEAREST_NEXT keeps, per lane, a distance
// strictly below the lane's best (first wins within a lane; NaN never
// does) at positions below n. NEAREST_END returns in ret the smallest
// position among the lanes holding the smallest best: the first position
// of the list with the smallest distance, or -1 when none is below FLT_MAX.
#define NEAREST_START \
	VBROADCASTSS iq2lanes<>+36(SB), Y14; \
	VPCMPEQD     Y13, Y13, Y13;          \
	VMOVDQU      iq2lanes<>+0(SB), Y12;  \
	MOVQ         CX, X11;                \
	VPBROADCASTD X11, Y11;               \
	VPBROADCASTD iq2lanes<>+32(SB), Y10

#define NEAREST_TERM0 \
	VPERMPS      Y15, Y0, Y1;  \
	VBROADCASTSS 0(AX), Y2;    \
	VSUBPS       Y2, Y1, Y1;   \
	VBROADCASTSS 0(BX), Y3;    \
	VMULPS       Y1, Y3, Y3;   \
	VMULPS       Y1, Y3, Y4

#define NEAREST_TERM(sh, off) \
	VPSRLD       $sh, Y0, Y5;  \
	VPERMPS      Y15, Y5, Y1;  \
	VBROADCASTSS off(AX), Y2;  \
	VSUBPS       Y2, Y1, Y1;   \
	VBROADCASTSS off(BX), Y3;  \
	VMULPS       Y1, Y3, Y3;   \
	VMULPS       Y1, Y3, Y3;   \
	VADDPS       Y3, Y4, Y4

#define NEAREST_NEXT \
	VCMPPS    $0x11, Y14, Y4, Y6; \
	VPCMPGTD  Y12, Y11, Y7;       \
	VPAND     Y7, Y6, Y6;         \
	VBLENDVPS Y6, Y4, Y14, Y14;   \
	VBLENDVPS Y6, Y12, Y13, Y13;  \
	VPADDD    Y10, Y12, Y12

#define NEAREST_END(ret) \
	VEXTRACTF128 $1, Y14, X0;            \
	VMINPS       X0, X14, X0;            \
	VPERMILPS    $0x4e, X0, X1;          \
	VMINPS       X1, X0, X0;             \
	VPERMILPS    $0xb1, X0, X1;          \
	VMINPS       X1, X0, X0;             \
	VBROADCASTSS X0, Y0;                 \
	VCMPPS       $0x00, Y0, Y14, Y1;     \
	VPBROADCASTD iq2lanes<>+40(SB), Y2;  \
	VBLENDVPS    Y1, Y13, Y2, Y2;        \
	VEXTRACTI128 $1, Y2, X3;             \
	VPMINSD      X3, X2, X2;             \
	VPSHUFD      $0x4e, X2, X3;          \
	VPMINSD      X3, X2, X2;             \
	VPSHUFD      $0xb1, X2, X3;          \
	VPMINSD      X3, X2, X2;             \
	VMOVD        X2, AX;                 \
	MOVLQSX      AX, AX;                 \
	MOVQ         AX, ret;                \
	VZEROUPPER

// The trial loops: lanes are trials 8b .. 8b+7 of block b; rows of q and u
// are 32 lanes (128 bytes) apart. LEVEL computes value x[off/4]'s
// t = 0.5·(id·x − 1) (Y15 the ids), collects in Y10 the lanes where
// !(|t| < 2^22) (NaN included), rounds t to the nearest even integer
// (VCVTPS2DQ: nearest_int in that range), clamps it to 0 .. Y8, ors it
// into the packed point Y7 at bit sh and stores the grid value 2l+1 as a
// float at qoff(DI). LEVELS_START loads the constants, Y8 = the largest
// level at maxl.
#define LEVEL(off, sh, qoff) \
	VBROADCASTSS off(SI), Y0;      \
	VMULPS       Y15, Y0, Y0;      \
	VSUBPS       Y14, Y0, Y0;      \
	VMULPS       Y13, Y0, Y0;      \
	VANDPS       Y12, Y0, Y1;      \
	VCMPPS       $0x05, Y11, Y1, Y1; \
	VORPS        Y1, Y10, Y10;     \
	VCVTPS2DQ    Y0, Y0;           \
	VPMAXSD      Y9, Y0, Y0;       \
	VPMINSD      Y8, Y0, Y0;       \
	VPSLLD       $sh, Y0, Y1;      \
	VPOR         Y1, Y7, Y7;       \
	VPADDD       Y0, Y0, Y0;       \
	VPADDD       Y6, Y0, Y0;       \
	VCVTDQ2PS    Y0, Y0;           \
	VMOVUPS      Y0, qoff(DI)

#define LEVELS_START(maxl) \
	MOVQ         ids+16(FP), DX;         \
	MOVQ         nblk+24(FP), R8;        \
	MOVQ         q+32(FP), R9;           \
	MOVQ         u+40(FP), R10;          \
	VBROADCASTSS iq2lanes<>+44(SB), Y14; \
	VBROADCASTSS iq2lanes<>+48(SB), Y13; \
	VPBROADCASTD iq2lanes<>+40(SB), Y12; \
	VBROADCASTSS iq2lanes<>+52(SB), Y11; \
	VXORPS       Y10, Y10, Y10;          \
	VPXOR        Y9, Y9, Y9;             \
	VPBROADCASTD maxl, Y8;               \
	VPBROADCASTD iq2lanes<>+56(SB), Y6

// LEVELS_BLOCK starts block b: its ids, x, n and the first rows of q and u.
#define LEVELS_BLOCK \
	VMOVUPS (DX), Y15;  \
	MOVQ    x+0(FP), SI; \
	MOVQ    n+8(FP), CX; \
	MOVQ    R9, DI;      \
	MOVQ    R10, BX

// LEVELS_END moves to the next block (back to label blk while blocks
// remain), then sets AX to whether every t was in range.
#define LEVELS_END(blk) \
	ADDQ   $32, DX;  \
	ADDQ   $32, R9;  \
	ADDQ   $32, R10; \
	DECQ   R8;       \
	JGT    blk;      \
	VPTEST Y10, Y10; \
	SETEQ  AX;       \
	VZEROUPPER

// func iq2NearestAVX2(pts *uint16, n int, x, w *[8]float32, vals *[3]float32, scale float32) int
// Eight coordinates, level i in bits 2i, 2i+1: the table sv0 sv1 sv2 sv2
// in both halves (sv[l] = scale·vals[l]) maps l + 4·(the next level's low
// bit) to sv[l].
TEXT ·iq2NearestAVX2(SB), NOSPLIT, $0-56
	MOVQ         pts+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVQ         x+16(FP), AX
	MOVQ         w+24(FP), BX
	MOVQ         vals+32(FP), DX
	VMOVSD       (DX), X15
	VINSERTPS    $0x20, 8(DX), X15, X15
	VINSERTPS    $0x30, 8(DX), X15, X15
	VBROADCASTSS scale+40(FP), X1
	VMULPS       X1, X15, X15
	VINSERTF128  $1, X15, Y15, Y15
	NEAREST_START

iq2loop:
	VPMOVZXWD (SI), Y0
	NEAREST_TERM0
	NEAREST_TERM(2, 4)
	NEAREST_TERM(4, 8)
	NEAREST_TERM(6, 12)
	NEAREST_TERM(8, 16)
	NEAREST_TERM(10, 20)
	NEAREST_TERM(12, 24)
	NEAREST_TERM(14, 28)
	NEAREST_NEXT
	ADDQ $16, SI
	SUBQ $8, CX
	JGT  iq2loop
	NEAREST_END(ret+48(FP))
	RET

// func iq2LevelsAVX2(x *float32, n int, ids *[32]float32, nblk int, q *[32 * 32]float32, u *[4 * 32]int32) bool
// Groups of eight values, levels 0..2 at bits 2i.
TEXT ·iq2LevelsAVX2(SB), NOSPLIT, $0-49
	LEVELS_START(iq2lanes<>+60(SB))

iq2block:
	LEVELS_BLOCK

iq2group:
	VPXOR Y7, Y7, Y7
	LEVEL(0, 0, 0)
	LEVEL(4, 2, 128)
	LEVEL(8, 4, 256)
	LEVEL(12, 6, 384)
	LEVEL(16, 8, 512)
	LEVEL(20, 10, 640)
	LEVEL(24, 12, 768)
	LEVEL(28, 14, 896)
	VMOVDQU Y7, (BX)
	ADDQ    $32, SI
	ADDQ    $1024, DI
	ADDQ    $128, BX
	SUBQ    $8, CX
	JGT     iq2group
	LEVELS_END(iq2block)
	MOVB AX, ret+48(FP)
	RET

// func gridFitAVX2(q *[32 * 32]float32, x, w *float32, n int, nblk int, sums *[64]float32)
// Lanes: trials 8b .. 8b+7 of block b; per value i in order, sumqx +=
// (w·x)·q and sumq2 += (w·q)·q, each product and sum rounded.
TEXT ·gridFitAVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), R9
	MOVQ nblk+32(FP), R8
	MOVQ sums+40(FP), R10

fblock:
	MOVQ   x+8(FP), AX
	MOVQ   w+16(FP), BX
	MOVQ   n+24(FP), CX
	MOVQ   R9, DI
	VXORPS Y3, Y3, Y3 // sumqx
	VXORPS Y4, Y4, Y4 // sumq2

fvalue:
	VMOVUPS      (DI), Y0
	VBROADCASTSS (BX), Y1
	VBROADCASTSS (AX), Y2
	VMULPS       Y2, Y1, Y2
	VMULPS       Y0, Y2, Y2
	VADDPS       Y2, Y3, Y3
	VMULPS       Y0, Y1, Y1
	VMULPS       Y0, Y1, Y1
	VADDPS       Y1, Y4, Y4
	ADDQ         $4, AX
	ADDQ         $4, BX
	ADDQ         $128, DI
	DECQ         CX
	JGT          fvalue

	VMOVUPS Y3, (R10)
	VMOVUPS Y4, 128(R10)
	ADDQ    $32, R9
	ADDQ    $32, R10
	DECQ    R8
	JGT     fblock
	VZEROUPPER
	RET
