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
GLOBL iq2lanes<>(SB), RODATA|NOPTR, $44

// func iq2NearestAVX2(pts *uint16, n int, x, w *[8]float32, sv *[4]float32) int
// Lanes: list positions p .. p+7. Level l of coordinate i is bits 2i, 2i+1
// of the point; VPERMPS indexes with the low three bits, so the table
// sv0 sv1 sv2 sv3 repeated in both halves maps l + 4·(next level's low
// bit) to sv[l] without masking. Per lane: e = sv[l] − x[i], d += (w[i]·e)·e
// in index order, then a strict < against the lane's best so far (first
// wins within a lane); at the end the smallest position among the lanes
// holding the smallest best is the first position of the list with it.
TEXT ·iq2NearestAVX2(SB), NOSPLIT, $0-48
	MOVQ pts+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ x+16(FP), AX
	MOVQ w+24(FP), BX
	MOVQ sv+32(FP), DX
	VMOVUPS      (DX), X15
	VINSERTF128  $1, X15, Y15, Y15
	VBROADCASTSS iq2lanes<>+36(SB), Y14 // best per lane
	VPCMPEQD     Y13, Y13, Y13          // its position, -1 for none
	VMOVDQU      iq2lanes<>+0(SB), Y12  // positions of the lanes
	MOVQ         CX, X11
	VPBROADCASTD X11, Y11               // n
	VPBROADCASTD iq2lanes<>+32(SB), Y10 // 8

loop:
	VPMOVZXWD    (SI), Y0
	VPERMPS      Y15, Y0, Y1
	VBROADCASTSS 0(AX), Y2
	VSUBPS       Y2, Y1, Y1
	VBROADCASTSS 0(BX), Y3
	VMULPS       Y1, Y3, Y3
	VMULPS       Y1, Y3, Y4
	VPSRLD       $2, Y0, Y5
	VPERMPS      Y15, Y5, Y1
	VBROADCASTSS 4(AX), Y2
	VSUBPS       Y2, Y1, Y1
	VBROADCASTSS 4(BX), Y3
	VMULPS       Y1, Y3, Y3
	VMULPS       Y1, Y3, Y3
	VADDPS       Y3, Y4, Y4
	VPSRLD       $4, Y0, Y5
	VPERMPS      Y15, Y5, Y1
	VBROADCASTSS 8(AX), Y2
	VSUBPS       Y2, Y1, Y1
	VBROADCASTSS 8(BX), Y3
	VMULPS       Y1, Y3, Y3
	VMULPS       Y1, Y3, Y3
	VADDPS       Y3, Y4, Y4
	VPSRLD       $6, Y0, Y5
	VPERMPS      Y15, Y5, Y1
	VBROADCASTSS 12(AX), Y2
	VSUBPS       Y2, Y1, Y1
	VBROADCASTSS 12(BX), Y3
	VMULPS       Y1, Y3, Y3
	VMULPS       Y1, Y3, Y3
	VADDPS       Y3, Y4, Y4
	VPSRLD       $8, Y0, Y5
	VPERMPS      Y15, Y5, Y1
	VBROADCASTSS 16(AX), Y2
	VSUBPS       Y2, Y1, Y1
	VBROADCASTSS 16(BX), Y3
	VMULPS       Y1, Y3, Y3
	VMULPS       Y1, Y3, Y3
	VADDPS       Y3, Y4, Y4
	VPSRLD       $10, Y0, Y5
	VPERMPS      Y15, Y5, Y1
	VBROADCASTSS 20(AX), Y2
	VSUBPS       Y2, Y1, Y1
	VBROADCASTSS 20(BX), Y3
	VMULPS       Y1, Y3, Y3
	VMULPS       Y1, Y3, Y3
	VADDPS       Y3, Y4, Y4
	VPSRLD       $12, Y0, Y5
	VPERMPS      Y15, Y5, Y1
	VBROADCASTSS 24(AX), Y2
	VSUBPS       Y2, Y1, Y1
	VBROADCASTSS 24(BX), Y3
	VMULPS       Y1, Y3, Y3
	VMULPS       Y1, Y3, Y3
	VADDPS       Y3, Y4, Y4
	VPSRLD       $14, Y0, Y5
	VPERMPS      Y15, Y5, Y1
	VBROADCASTSS 28(AX), Y2
	VSUBPS       Y2, Y1, Y1
	VBROADCASTSS 28(BX), Y3
	VMULPS       Y1, Y3, Y3
	VMULPS       Y1, Y3, Y3
	VADDPS       Y3, Y4, Y4
	VCMPPS       $0x11, Y14, Y4, Y6 // d < best (NaN: false)
	VPCMPGTD     Y12, Y11, Y7       // position < n
	VPAND        Y7, Y6, Y6
	VBLENDVPS    Y6, Y4, Y14, Y14
	VBLENDVPS    Y6, Y12, Y13, Y13
	VPADDD       Y10, Y12, Y12
	ADDQ         $16, SI
	SUBQ         $8, CX
	JGT          loop

	VEXTRACTF128 $1, Y14, X0
	VMINPS       X0, X14, X0
	VPERMILPS    $0x4e, X0, X1
	VMINPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMINPS       X1, X0, X0
	VBROADCASTSS X0, Y0
	VCMPPS       $0x00, Y0, Y14, Y1 // lanes holding the smallest best
	VPBROADCASTD iq2lanes<>+40(SB), Y2
	VBLENDVPS    Y1, Y13, Y2, Y2
	VEXTRACTI128 $1, Y2, X3
	VPMINSD      X3, X2, X2
	VPSHUFD      $0x4e, X2, X3
	VPMINSD      X3, X2, X2
	VPSHUFD      $0xb1, X2, X3
	VPMINSD      X3, X2, X2
	VMOVD        X2, AX
	MOVLQSX      AX, AX
	MOVQ         AX, ret+40(FP)
	VZEROUPPER
	RET
