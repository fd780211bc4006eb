//go:build !purego

#include "textflag.h"
#include "quant_amd64.h"

// The midpoints of consecutive non-negative kvalues_mxfp4 (doubled E2M1
// values 0,1,2,3,4,6,8,12): 0.5, 1.5, 2.5, 3.5, 5, 7, 10.
DATA fp4consts<>+0(SB)/4, $0x3f000000
DATA fp4consts<>+4(SB)/4, $0x3fc00000
DATA fp4consts<>+8(SB)/4, $0x40200000
DATA fp4consts<>+12(SB)/4, $0x40600000
DATA fp4consts<>+16(SB)/4, $0x40a00000
DATA fp4consts<>+20(SB)/4, $0x40e00000
DATA fp4consts<>+24(SB)/4, $0x41200000
DATA fp4consts<>+28(SB)/4, $0x7fffffff // magnitude mask
DATA fp4consts<>+32(SB)/4, $8
GLOBL fp4consts<>(SB), RODATA|NOPTR, $36

PACKPERM

// MIDCODE sets r (holding 8 values) to their codes: the number n of
// midpoints (Y8-Y14, as integer bits) below |x|, plus 8 (Y7) where x is
// negative and n > 0; Y6 is zero. Clobbers Y1, Y4, Y5.
#define MIDCODE(r) \
	VPAND    Y15, r, Y4;  \
	VPCMPGTD Y8, Y4, Y5;  \
	VPCMPGTD Y9, Y4, Y1;  \
	VPADDD   Y1, Y5, Y5;  \
	VPCMPGTD Y10, Y4, Y1; \
	VPADDD   Y1, Y5, Y5;  \
	VPCMPGTD Y11, Y4, Y1; \
	VPADDD   Y1, Y5, Y5;  \
	VPCMPGTD Y12, Y4, Y1; \
	VPADDD   Y1, Y5, Y5;  \
	VPCMPGTD Y13, Y4, Y1; \
	VPADDD   Y1, Y5, Y5;  \
	VPCMPGTD Y14, Y4, Y1; \
	VPADDD   Y1, Y5, Y5;  \
	VPSUBD   Y5, Y6, Y5;  \
	VPSRAD   $31, r, Y4;  \
	VPCMPGTD Y6, Y5, Y1;  \
	VPAND    Y1, Y4, Y4;  \
	VPAND    Y7, Y4, Y4;  \
	VPOR     Y4, Y5, r

// func mxfp4AVX2(dst *byte, src *float32, nblocks int) int
//
// quantize_row_mxfp4_ref on nblocks blocks of 32 finite values, for blocks
// whose largest magnitude amax has a biased exponent b of at least 5 and a
// mantissa below 0x7FF000: there floor(log2f(amax)) is b-127 (log2f cannot
// round up to the next integer), so e = b-2, d = 2^(b-130), and the
// midpoints between the grid values k·d are normal and exact, so
// best_index_mxfp4's choice is the count of midpoints below |x| (see
// fp4Grid.bestIndex). It returns the number of blocks done, stopping before
// a block outside that range.
TEXT ·mxfp4AVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         nblocks+16(FP), CX
	XORQ         BX, BX
	VPBROADCASTD fp4consts<>+28(SB), Y15
	VPBROADCASTD fp4consts<>+32(SB), Y7
	VPXOR        Y6, Y6, Y6

mxblock:
	CMPQ         BX, CX
	JGE          mxdone
	VPAND        (SI), Y15, Y0
	VPAND        32(SI), Y15, Y1
	VPAND        64(SI), Y15, Y2
	VPAND        96(SI), Y15, Y3
	HMAXUD4
	MOVL         AX, DX
	ANDL         $0x7fffff, DX
	CMPL         DX, $0x7ff000
	JAE          mxdone
	SHRL         $23, AX
	CMPL         AX, $5
	JB           mxdone
	LEAL         -2(AX), DX
	MOVB         DX, (DI)
	SUBL         $130, AX
	SHLL         $23, AX
	VMOVD        AX, X0
	VPBROADCASTD X0, Y0
	VPBROADCASTD fp4consts<>+0(SB), Y8
	VPBROADCASTD fp4consts<>+4(SB), Y9
	VPBROADCASTD fp4consts<>+8(SB), Y10
	VPBROADCASTD fp4consts<>+12(SB), Y11
	VPBROADCASTD fp4consts<>+16(SB), Y12
	VPBROADCASTD fp4consts<>+20(SB), Y13
	VPBROADCASTD fp4consts<>+24(SB), Y14
	VPADDD       Y0, Y8, Y8
	VPADDD       Y0, Y9, Y9
	VPADDD       Y0, Y10, Y10
	VPADDD       Y0, Y11, Y11
	VPADDD       Y0, Y12, Y12
	VPADDD       Y0, Y13, Y13
	VPADDD       Y0, Y14, Y14

	VMOVUPS (SI), Y0
	MIDCODE(Y0)
	VMOVUPS 32(SI), Y2
	MIDCODE(Y2)
	VMOVUPS 64(SI), Y3
	MIDCODE(Y3)
	VPACKUSDW Y2, Y0, Y0
	VMOVUPS 96(SI), Y2
	MIDCODE(Y2)
	VPACKUSDW Y2, Y3, Y2
	VPACKUSWB Y2, Y0, Y0
	VMOVDQU   packperm<>(SB), Y4
	VPERMD    Y0, Y4, Y0
	VEXTRACTI128 $1, Y0, X1
	VPSLLW    $4, X1, X1
	VPOR      X1, X0, X0
	VMOVDQU   X0, 1(DI)
	ADDQ      $128, SI
	ADDQ      $17, DI
	INCQ      BX
	JMP       mxblock

mxdone:
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET

// func fp4Codes16AVX2(qs *byte, x *float32, mid *[7]uint32)
//
// best_index_mxfp4 of the 16 values at x against a grid whose midpoints
// have the bits mid, each code the count of midpoints below |x| plus 8 for
// a negative x (fp4Grid.bestIndex, for |x| below its lim), stored as
// NVFP4 packs a sub-block: qs[j] = code(x[j]) | code(x[8+j])<<4.
TEXT ·fp4Codes16AVX2(SB), NOSPLIT, $0-24
	MOVQ         qs+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         mid+16(FP), DX
	VPBROADCASTD fp4consts<>+28(SB), Y15
	VPBROADCASTD fp4consts<>+32(SB), Y7
	VPXOR        Y6, Y6, Y6
	VPBROADCASTD (DX), Y8
	VPBROADCASTD 4(DX), Y9
	VPBROADCASTD 8(DX), Y10
	VPBROADCASTD 12(DX), Y11
	VPBROADCASTD 16(DX), Y12
	VPBROADCASTD 20(DX), Y13
	VPBROADCASTD 24(DX), Y14
	VMOVUPS      (SI), Y0
	MIDCODE(Y0)
	VMOVUPS      32(SI), Y2
	MIDCODE(Y2)
	VPSLLD       $4, Y2, Y2
	VPOR         Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPACKUSDW    X1, X0, X0
	VPACKUSWB    X0, X0, X0
	VMOVQ        X0, (DI)
	VZEROUPPER
	RET
