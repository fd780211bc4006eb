//go:build !purego

#include "textflag.h"

// Integer masks for the steps of the level search: s3, s1, s2 of iq4Tab.
DATA iq4consts<>+0(SB)/4, $4
DATA iq4consts<>+4(SB)/4, $4
DATA iq4consts<>+8(SB)/4, $4
DATA iq4consts<>+12(SB)/4, $4
DATA iq4consts<>+16(SB)/4, $4
DATA iq4consts<>+20(SB)/4, $4
DATA iq4consts<>+24(SB)/4, $4
DATA iq4consts<>+28(SB)/4, $4
DATA iq4consts<>+32(SB)/4, $2
DATA iq4consts<>+36(SB)/4, $2
DATA iq4consts<>+40(SB)/4, $2
DATA iq4consts<>+44(SB)/4, $2
DATA iq4consts<>+48(SB)/4, $2
DATA iq4consts<>+52(SB)/4, $2
DATA iq4consts<>+56(SB)/4, $2
DATA iq4consts<>+60(SB)/4, $2
DATA iq4consts<>+64(SB)/4, $1
DATA iq4consts<>+68(SB)/4, $1
DATA iq4consts<>+72(SB)/4, $1
DATA iq4consts<>+76(SB)/4, $1
DATA iq4consts<>+80(SB)/4, $1
DATA iq4consts<>+84(SB)/4, $1
DATA iq4consts<>+88(SB)/4, $1
DATA iq4consts<>+92(SB)/4, $1
GLOBL iq4consts<>(SB), RODATA|NOPTR, $96

// LOADTAB loads iq4Tab (at BX): step1 into Y6, step2 into Y7 and Y5,
// step3 into Y8, step4 into Y9, lo and hi into Y10 and Y11.
#define LOADTAB \
	VMOVUPS (BX), Y6;     \
	VMOVUPS 32(BX), Y7;   \
	VMOVUPS 64(BX), Y5;   \
	VMOVUPS 96(BX), Y8;   \
	VMOVUPS 128(BX), Y9;  \
	VMOVUPS 160(BX), Y10; \
	VMOVUPS 192(BX), Y11

// SEARCH runs iq4Index's binary search over the bounds on each lane of al
// (Y14), each step comparing with "not less than" so that a NaN goes to
// the last entry. It leaves in j (Y1) the results s1, s2, s3 of the first
// three steps as 2·s1 + s2 + 4·s3 (iq4Tab's order), and in m (Y15) the
// fourth step's, all ones where the index is odd. The second step's bound
// is a blend of two, the third's an in-lane VPERMILPS lookup by s1, s2,
// the fourth's a VPERMPS lookup by j. Clobbers Y4.
#define SEARCH \
	VCMPPS    $5, Y6, Y14, Y15;             \
	VPAND     iq4consts<>+32(SB), Y15, Y1;  \
	VBLENDVPS Y15, Y5, Y7, Y4;              \
	VCMPPS    $5, Y4, Y14, Y15;             \
	VPAND     iq4consts<>+64(SB), Y15, Y15; \
	VPOR      Y15, Y1, Y1;                  \
	VPERMILPS Y1, Y8, Y4;                   \
	VCMPPS    $5, Y4, Y14, Y15;             \
	VPAND     iq4consts<>+0(SB), Y15, Y15;  \
	VPOR      Y15, Y1, Y1;                  \
	VPERMPS   Y9, Y1, Y4;                   \
	VCMPPS    $5, Y4, Y14, Y15

// func iq4TrialsAVX2(x, w *float32, ids *[16]float32, tab *iq4Tab, sums *[32]float32)
//
// The sums of quantize_row_iq4_nl_impl's 16 trials on the 32 values x with
// weights w, trial k at inverse scale ids[k] in lane k%8 of two passes.
// For each value, in index order: its level q = kvalues_iq4nl[l] (SEARCH),
// then sumqx += (w·q)·x and sumq2 += (w·q)·q, each product its own VMULPS
// (no FMA), each sum its own VADDPS. sums receives sumqx[16] then
// sumq2[16].
TEXT ·iq4TrialsAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), R8
	MOVQ ids+16(FP), AX
	MOVQ tab+24(FP), BX
	MOVQ sums+32(FP), DX
	LOADTAB
	MOVQ $2, CX

trpass:
	VMOVUPS (AX), Y0
	VXORPS  Y2, Y2, Y2 // sumqx
	VXORPS  Y3, Y3, Y3 // sumq2
	XORQ    DI, DI

trloop:
	VBROADCASTSS (SI)(DI*4), Y12
	VBROADCASTSS (R8)(DI*4), Y13
	VMULPS       Y12, Y0, Y14
	SEARCH
	VPERMPS      Y10, Y1, Y4
	VPERMPS      Y11, Y1, Y1
	VBLENDVPS    Y15, Y1, Y4, Y4 // q
	VMULPS       Y4, Y13, Y1     // w·q
	VMULPS       Y12, Y1, Y15
	VADDPS       Y15, Y2, Y2
	VMULPS       Y4, Y1, Y1
	VADDPS       Y1, Y3, Y3
	INCQ         DI
	CMPQ         DI, $32
	JLT          trloop

	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 64(DX)
	ADDQ    $32, AX
	ADDQ    $32, DX
	DECQ    CX
	JNZ     trpass
	VZEROUPPER
	RET

// INDEX sets r to the best_index_int8 of id (Y0) times the 8 values at
// addr: iq4Tab's h by SEARCH's j (the table in Y13), plus one where m is
// set. Clobbers Y1, Y4, Y14, Y15.
#define INDEX(addr, r) \
	VMULPS addr, Y0, Y14; \
	SEARCH;               \
	VPERMD Y13, Y1, r;    \
	VPSUBD Y15, r, r

// func iq4PackAVX2(qs *byte, x *float32, id float32, tab *iq4Tab)
//
// The 4-bit best_index_int8 of the 32 values x at inverse scale id, value j
// in the low nibble of qs[j] and value j+16 in the high nibble.
TEXT ·iq4PackAVX2(SB), NOSPLIT, $0-32
	MOVQ         qs+0(FP), DI
	MOVQ         x+8(FP), SI
	VBROADCASTSS id+16(FP), Y0
	MOVQ         tab+24(FP), BX
	LOADTAB
	VMOVDQU      224(BX), Y13
	INDEX((SI), Y2)
	INDEX(64(SI), Y3)
	VPSLLD       $4, Y3, Y3
	VPOR         Y3, Y2, Y2
	INDEX(32(SI), Y3)
	INDEX(96(SI), Y12)
	VPSLLD       $4, Y12, Y12
	VPOR         Y12, Y3, Y3
	VPACKUSDW    Y3, Y2, Y2
	VPERMQ       $0xd8, Y2, Y2
	VEXTRACTI128 $1, Y2, X3
	VPACKUSWB    X3, X2, X2
	VMOVDQU      X2, (DI)
	VZEROUPPER
	RET

// func iq4WeightsAVX2(x, qw *float32, sigma2 float32, weight *[32]float32) float32
//
// The weights of the 32 values x, qw·sqrt(sigma2 + x·x) or x·x without qw
// (qw nil), each operation rounded as ggml's; returns the first x of
// largest magnitude, or 0 when all are zeros (ggml's amax loop with its
// strict comparison).
TEXT ·iq4WeightsAVX2(SB), NOSPLIT, $0-36
	MOVQ         x+0(FP), SI
	MOVQ         qw+8(FP), R8
	MOVQ         weight+24(FP), DI
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VMOVUPS      64(SI), Y2
	VMOVUPS      96(SI), Y3
	VMULPS       Y0, Y0, Y4
	VMULPS       Y1, Y1, Y5
	VMULPS       Y2, Y2, Y6
	VMULPS       Y3, Y3, Y7
	TESTQ        R8, R8
	JZ           wstore
	VBROADCASTSS sigma2+16(FP), Y8
	VADDPS       Y8, Y4, Y4
	VADDPS       Y8, Y5, Y5
	VADDPS       Y8, Y6, Y6
	VADDPS       Y8, Y7, Y7
	VSQRTPS      Y4, Y4
	VSQRTPS      Y5, Y5
	VSQRTPS      Y6, Y6
	VSQRTPS      Y7, Y7
	VMULPS       (R8), Y4, Y4
	VMULPS       32(R8), Y5, Y5
	VMULPS       64(R8), Y6, Y6
	VMULPS       96(R8), Y7, Y7

wstore:
	VMOVUPS      Y4, (DI)
	VMOVUPS      Y5, 32(DI)
	VMOVUPS      Y6, 64(DI)
	VMOVUPS      Y7, 96(DI)
	VPCMPEQD     Y8, Y8, Y8
	VPSRLD       $1, Y8, Y8 // magnitude mask
	VANDPS       Y8, Y0, Y0
	VANDPS       Y8, Y1, Y1
	VANDPS       Y8, Y2, Y2
	VANDPS       Y8, Y3, Y3
	VMAXPS       Y1, Y0, Y4
	VMAXPS       Y3, Y2, Y5
	VMAXPS       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS       X5, X4, X4
	VSHUFPS      $0x4e, X4, X4, X5
	VMAXPS       X5, X4, X4
	VSHUFPS      $0xb1, X4, X4, X5
	VMAXPS       X5, X4, X4
	VXORPS       X5, X5, X5
	VUCOMISS     X5, X4
	JEQ          wzero
	VBROADCASTSS X4, Y4
	VCMPPS       $0, Y4, Y0, Y0
	VCMPPS       $0, Y4, Y1, Y1
	VCMPPS       $0, Y4, Y2, Y2
	VCMPPS       $0, Y4, Y3, Y3
	VMOVMSKPS    Y0, AX
	VMOVMSKPS    Y1, BX
	VMOVMSKPS    Y2, CX
	VMOVMSKPS    Y3, DX
	SHLL         $8, BX
	SHLL         $16, CX
	SHLL         $24, DX
	ORL          BX, AX
	ORL          CX, AX
	ORL          DX, AX
	BSFL         AX, AX
	MOVL         (SI)(AX*4), AX
	MOVL         AX, ret+32(FP)
	VZEROUPPER
	RET

wzero:
	MOVL $0, ret+32(FP)
	VZEROUPPER
	RET
