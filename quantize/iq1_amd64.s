//go:build !purego

#include "textflag.h"

// PASS ors into the lanes of acc those where 0 < q2 and best*q2 < qx*qx
// (ordered compares: NaN fails, as ggml's C comparisons do); t1 and t2 are
// scratch, q2 is overwritten (and qx when it is t1).
#define PASS(qx, q2, t1, t2, zero, best, acc) \
	VMULPS qx, qx, t1;           \
	VMULPS q2, best, t2;         \
	VCMPPS $0x11, t1, t2, t2;    \
	VCMPPS $0x11, q2, zero, q2;  \
	VANDPS q2, t2, t2;           \
	VORPS  t2, acc, acc

// IQ1M_I1 sets up the boundary i1 (R10) for the lanes: Y12 and Y11 the
// broadcast px[h][i1], Y10 and Y9 the lanes' tws·v2² + pw[h][i1]·c1.
#define IQ1M_I1 \
	VBROADCASTSS (BX)(R10*4), Y12;    \
	VBROADCASTSS 96(BX)(R10*4), Y11;  \
	VBROADCASTSS 192(BX)(R10*4), Y0;  \
	VMULPS 128(DI), Y0, Y0;           \
	VADDPS 64(DI), Y0, Y10;           \
	VBROADCASTSS 288(BX)(R10*4), Y0;  \
	VMULPS 160(DI), Y0, Y0;           \
	VADDPS 96(DI), Y0, Y9

// IQ1M_SUMS computes the lanes' Σqx (Y4) and Σq² (Y5) for the boundaries
// i2, i2+1 whose prefix sums start at SI, as ggml does: per half
// qx = txs·v2 − (px[i1] + px[i2]) and q2 = (tws·v2² + pw[i1]·c1) +
// pw[i2]·c2, then the halves added. Y0-Y3 are scratch.
#define IQ1M_SUMS \
	VPERMPS 0(SI), Y15, Y0;   \
	VPERMPS 96(SI), Y15, Y1;  \
	VPERMPS 192(SI), Y15, Y2; \
	VPERMPS 288(SI), Y15, Y3; \
	VADDPS Y0, Y12, Y0;       \
	VADDPS Y1, Y11, Y1;       \
	VMOVUPS 0(DI), Y4;        \
	VSUBPS Y0, Y4, Y4;        \
	VMOVUPS 32(DI), Y0;       \
	VSUBPS Y1, Y0, Y0;        \
	VADDPS Y0, Y4, Y4;        \
	VMULPS 192(DI), Y2, Y2;   \
	VADDPS Y2, Y10, Y2;       \
	VMULPS 224(DI), Y3, Y3;   \
	VADDPS Y3, Y9, Y3;        \
	VADDPS Y3, Y2, Y5

// func iq1mSearchAVX2(tab *[4][24]float32, lanes *[10][8]float32) (i1, i2, k int, scale float32)
// Rows of tab are 24 floats (96 bytes) apart: px[0], px[1], pw[0], pw[1].
// lanes: 0 txs of half 0, 32 txs of half 1, 64 and 96 tws·v2², 128 and 160
// c1, 192 and 224 c2 (per half, each lane's shift), 256 and 288 scratch.
// Registers: Y15 the lane permutation (i2 in lanes 0-3, i2+1 in 4-7), Y14
// zero, Y13 the best score broadcast, Y12 and Y11 px[h][i1], Y10 and Y9
// the lanes' tws·v2² + pw[h][i1]·c1; R10 i1, R11 i2, SI &tab[0][i2]. The
// results are written at each accepted candidate.
TEXT ·iq1mSearchAVX2(SB), NOSPLIT, $0-44
	MOVQ tab+0(FP), BX
	MOVQ lanes+8(FP), DI
	VMOVDQU iq1consts<>+44(SB), Y15
	VXORPS Y14, Y14, Y14
	VBROADCASTSS iq1consts<>+76(SB), Y13 // -FLT_MAX
	MOVQ $-1, AX
	MOVQ AX, i1+16(FP)
	MOVQ AX, i2+24(FP)
	MOVQ AX, k+32(FP)
	MOVL $0, scale+40(FP)
	XORQ R10, R10

i1loop:
	IQ1M_I1
	MOVQ R10, R11
	LEAQ (BX)(R10*4), SI

i2loop:
	IQ1M_SUMS
	VMULPS Y4, Y4, Y6        // Σqx·Σqx
	VCMPPS $0x11, Y5, Y14, Y7 // 0 < Σq² (ordered: NaN fails)
	VMULPS Y5, Y13, Y8
	VCMPPS $0x11, Y6, Y8, Y8  // best·Σq² < Σqx·Σqx
	VANDPS Y7, Y8, Y8
	VMOVMSKPS Y8, AX
	MOVL $0xff, R9
	CMPQ R11, $16
	JLT  full
	MOVL $0x0f, R9 // i2 = 16: lanes 4-7 would be i2 = 17
full:
	ANDL R9, AX
	JNZ  accept

next:
	ADDQ $2, R11
	ADDQ $8, SI
	CMPQ R11, $16
	JLE  i2loop
	INCQ R10
	CMPQ R10, $16
	JLE  i1loop

	VZEROUPPER
	RET

accept:
	VMOVMSKPS Y7, CX
	ANDL CX, R9         // the lanes with Σq² > 0
	VDIVPS Y5, Y4, Y0   // scale = Σqx/Σq²
	VMULPS Y4, Y0, Y1   // score = scale·Σqx
	VMOVUPS Y0, 256(DI)
	VMOVUPS Y1, 288(DI)

acceptloop:
	BSFL AX, CX // the first lane that passes becomes the best
	MOVQ R10, i1+16(FP)
	MOVL CX, R12
	SHRL $2, R12
	ADDQ R11, R12
	MOVQ R12, i2+24(FP)
	MOVL CX, R12
	ANDL $3, R12
	MOVQ R12, k+32(FP)
	MOVL 256(DI)(CX*4), R12
	MOVL R12, scale+40(FP)
	VBROADCASTSS 288(DI)(CX*4), Y13
	VMULPS Y5, Y13, Y8
	VCMPPS $0x11, Y6, Y8, Y8
	VMOVMSKPS Y8, AX
	ANDL R9, AX
	MOVL $-2, R12
	SHLL CX, R12
	ANDL R12, AX // the lanes after it that pass against its score
	JNZ  acceptloop
	JMP  next

// BESTINIT starts a first pass (iq1mBestAVX2, iq1sBestAVX2): the lane
// permutation at iq1consts+perm in Y15, zero in Y14, no largest S yet (Y13
// -inf, Y8 -1), no NaN (Y7), R10 (i1) and DX (32v) zero.
#define BESTINIT(perm) \
	VMOVDQU iq1consts<>+perm(SB), Y15;      \
	VXORPS Y14, Y14, Y14;                   \
	VBROADCASTSS iq1consts<>+80(SB), Y13;   \
	VPCMPEQD Y8, Y8, Y8;                    \
	VXORPS Y7, Y7, Y7;                      \
	XORQ R10, R10;                          \
	XORQ DX, DX

// BESTSTORE ends a first pass: the per-lane largest scores (Y13), their
// vectors (Y8) and the NaN lanes (Y7) go after the four arrays of buf
// (R8), whose length in bytes is n32.
#define BESTSTORE(n32) \
	VMOVUPS Y13, (4*n32)(R8);    \
	VMOVDQU Y8, (4*n32+32)(R8);  \
	VMOVUPS Y7, (4*n32+64)(R8);  \
	VZEROUPPER

// BESTLANE stores a first pass's vector (R8 + DX: S, then Σqx² at +n32, Σq²
// at +2·n32, the quotient at +3·n32) from Σqx (Y4), Σq² (Y5), the scale
// Σqx/Σq² (Y1), S (Y2) and the valid lanes (Y0), and keeps the per-lane
// first largest S in Y13 and its 32v in Y8; Y7 collects NaN S. Y3, Y5 and
// Y6 are scratch.
#define BESTLANE(n32) \
	VMULPS Y4, Y4, Y6;                       \
	VANDPS Y0, Y5, Y3;                       \
	VMOVUPS Y6, n32(R8)(DX*1);               \
	VMOVUPS Y3, (2*n32)(R8)(DX*1);           \
	VMOVUPS Y1, (3*n32)(R8)(DX*1);           \
	VCMPPS $3, Y2, Y2, Y5;                   \
	VANDPS Y0, Y5, Y5;                       \
	VORPS Y5, Y7, Y7;                        \
	VBROADCASTSS iq1consts<>+80(SB), Y3;     \
	VBLENDVPS Y0, Y2, Y3, Y3;                \
	VMOVUPS Y3, 0(R8)(DX*1);                 \
	VCMPPS $0x11, Y3, Y13, Y5;               \
	VBLENDVPS Y5, Y3, Y13, Y13;              \
	MOVQ DX, X6;                             \
	VPBROADCASTD X6, Y6;                     \
	VBLENDVPS Y5, Y6, Y8, Y8

// func iq1mBestAVX2(tab *[4][24]float32, lanes *[10][8]float32, buf *[32*iq1mVecs + 24]float32)
// The first pass of iq1mSearch.run's decision: the candidates of all
// (i1, i2) as in iq1mSearchAVX2, vector v = 0..80 (lane l of vector v is
// candidate w = 8v+l). Per lane it stores in buf the score S = (Σqx/Σq²)·Σqx
// where the candidate is valid (i2 ≤ 16, Σq² > 0) and −inf elsewhere,
// Σqx·Σqx, Σq² (0 where not valid) and Σqx/Σq², and keeps per lane the
// first largest S (Y13) and its vector (Y8, as 32v), then BESTSTORE. Y7
// collects the valid lanes whose S is NaN.
TEXT ·iq1mBestAVX2(SB), NOSPLIT, $0-24
	MOVQ tab+0(FP), BX
	MOVQ lanes+8(FP), DI
	MOVQ buf+16(FP), R8
	BESTINIT(44)
	LEAQ iq1consts<>+144(SB), R13 // all lanes
	LEAQ iq1consts<>+160(SB), R12 // lanes 0-3

bi1loop:
	IQ1M_I1
	MOVQ R10, R11
	LEAQ (BX)(R10*4), SI

bi2loop:
	IQ1M_SUMS
	MOVQ R13, R9
	CMPQ R11, $16
	CMOVQGE R12, R9           // i2 = 16: lanes 4-7 would be i2 = 17
	VCMPPS $0x11, Y5, Y14, Y0 // 0 < Σq² (ordered: NaN fails)
	VANDPS (R9), Y0, Y0       // valid
	VDIVPS Y5, Y4, Y1         // scale = Σqx/Σq²
	VMULPS Y4, Y1, Y2         // S = scale·Σqx
	BESTLANE(2592) // 32*iq1mVecs
	ADDQ $32, DX
	ADDQ $2, R11
	ADDQ $8, SI
	CMPQ R11, $16
	JLE  bi2loop
	INCQ R10
	CMPQ R10, $16
	JLE  bi1loop

	BESTSTORE(2592) // 32*iq1mVecs
	RET

// func iq1PickAVX2(buf *float32, n32 int) int
// The decision after a first pass (iq1mBestAVX2, iq1sBestAVX2) over n32/32
// vectors: the first candidate w with the largest S, if ggml's scan
// provably ends there, else -2; -1 when no candidate is valid (see
// iq1mSearch.run).
TEXT ·iq1PickAVX2(SB), NOSPLIT, $0-24
	MOVQ buf+0(FP), R8
	MOVQ n32+8(FP), SI
	LEAQ (R8)(SI*1), BX  // Σqx²
	LEAQ (BX)(SI*1), DX  // Σq²
	LEAQ (DX)(SI*2), R11 // after the quotients
	VMOVUPS 0(R11), Y13
	VMOVDQU 32(R11), Y8
	VMOVUPS 64(R11), Y7
	VMOVMSKPS Y7, AX
	TESTL AX, AX
	JNZ  undecided
	VXORPS Y14, Y14, Y14
	// The largest S and the first candidate w with it.
	VEXTRACTF128 $1, Y13, X0
	VMAXPS X0, X13, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0
	VBROADCASTSS iq1consts<>+80(SB), X1
	VUCOMISS X1, X0
	JEQ  none                 // every lane -inf: no valid candidate
	VBROADCASTSS X0, Y0
	VCMPPS $0x00, Y0, Y13, Y1
	VPSRLD $2, Y8, Y2
	VPADDD iq1consts<>+0(SB), Y2, Y2 // 8v + lane
	VPCMPEQD Y3, Y3, Y3
	VBLENDVPS Y1, Y2, Y3, Y3
	VEXTRACTI128 $1, Y3, X4
	VPMINUD X4, X3, X3
	VPSHUFD $0x4e, X3, X4
	VPMINUD X4, X3, X3
	VPSHUFD $0xb1, X3, X4
	VPMINUD X4, X3, X3
	VMOVD X3, AX              // w
	MOVL AX, CX
	SHRL $3, CX
	SHLL $5, CX               // 32v of w
	MOVL AX, R12
	ANDL $7, R12              // lane of w

	// Mb, the largest S before w (or -FLT_MAX): ggml's best score when it
	// reaches w is at most Mb.
	VBROADCASTSS iq1consts<>+76(SB), Y1
	XORQ R9, R9
mbloop:
	CMPQ R9, CX
	JGE  mbdone
	VMAXPS 0(R8)(R9*1), Y1, Y1
	ADDQ $32, R9
	JMP  mbloop
mbdone:
	MOVQ R12, X2
	VPBROADCASTD X2, Y2
	VMOVDQU iq1consts<>+0(SB), Y3
	VPCMPGTD Y3, Y2, Y2       // lanes before w's
	VBROADCASTSS iq1consts<>+76(SB), Y4
	VMOVUPS 0(R8)(CX*1), Y3
	VBLENDVPS Y2, Y3, Y4, Y4
	VMAXPS Y4, Y1, Y1
	VEXTRACTF128 $1, Y1, X0
	VMAXPS X0, X1, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0
	// w passes against Mb, so against ggml's best (monotone): w is taken.
	VMULSS (DX)(AX*4), X0, X0
	VMOVSS (BX)(AX*4), X1
	VUCOMISS X0, X1
	JLS  undecided

	// No candidate after w passes against S of w: ggml keeps w.
	VBROADCASTSS 0(R8)(AX*4), Y1
	VMOVDQU iq1consts<>+0(SB), Y2
	MOVQ R12, X3
	VPBROADCASTD X3, Y3
	VPCMPGTD Y3, Y2, Y2       // lanes after w's
	VXORPS Y6, Y6, Y6
	MOVQ CX, R9
c2loop:
	VMOVUPS (DX)(R9*1), Y3
	VMULPS Y3, Y1, Y4
	VCMPPS $0x11, (BX)(R9*1), Y4, Y4 // S·Σq² < Σqx·Σqx
	VCMPPS $0x11, Y3, Y14, Y3
	VANDPS Y3, Y4, Y4
	VANDPS Y2, Y4, Y4
	VORPS Y4, Y6, Y6
	VPCMPEQD Y2, Y2, Y2
	ADDQ $32, R9
	CMPQ R9, SI
	JLT  c2loop
	VMOVMSKPS Y6, CX
	TESTL CX, CX
	JNZ  undecided
	MOVQ AX, ret+16(FP)
	VZEROUPPER
	RET

none:
	MOVQ $-1, ret+16(FP)
	VZEROUPPER
	RET

undecided:
	MOVQ $-2, ret+16(FP)
	VZEROUPPER
	RET

// func iq1sBestAVX2(tab *[2][48]float32, lanes *[5][8]float32, buf *[32*iq1sVecs + 24]float32)
// The first pass of iq1sSearch.run's decision, as iq1mBestAVX2: vector
// v = 0..152 holds for one i1 the boundaries i2..i2+3 (iq1sVectors), lane
// 2j+h the candidate i2+j with the shift +1 (h = 0) or -1 (h = 1), valid
// where i2+j ≤ 32 and Σq² > 0. Per lane, as ggml: Σqx = (sx1·v0 + sx2·v1)
// + sx3·v2 and Σq² = (sw1·v0·v0 + sw2·v1·v1) + sw3·v2·v2 with sx1 = S[i1]
// − S[0], sx2 = S[i2] − S[i1], sx3 = S[32] − S[i2] for S = sumx and sumw.
// lanes: 0 v1, 32 v2, 64 v0 (per lane's shift), 96 sumx[32], 128 sumw[32].
// Registers: Y12 and Y11 sumx[i1] and sumw[i1], Y10 and Y9 sx1·v0 and
// sw1·v0·v0; R10 i1, R11 i2, SI &sumx[i2], R13 the lane masks.
TEXT ·iq1sBestAVX2(SB), NOSPLIT, $0-24
	MOVQ tab+0(FP), BX
	MOVQ lanes+8(FP), DI
	MOVQ buf+16(FP), R8
	BESTINIT(208)
	LEAQ iq1consts<>+144(SB), R13
	MOVQ $4, R12

si1loop:
	VBROADCASTSS (BX)(R10*4), Y12
	VBROADCASTSS 192(BX)(R10*4), Y11
	VBROADCASTSS 0(BX), Y0
	VSUBPS Y0, Y12, Y0        // sx1 = sumx[i1] - sumx[0]
	VMULPS 64(DI), Y0, Y10    // sx1·v0
	VBROADCASTSS 192(BX), Y0
	VSUBPS Y0, Y11, Y0        // sw1
	VMULPS 64(DI), Y0, Y0
	VMULPS 64(DI), Y0, Y9     // sw1·v0·v0
	MOVQ R10, R11
	LEAQ (BX)(R10*4), SI

si2loop:
	VPERMPS 0(SI), Y15, Y0    // sumx[i2+j]
	VPERMPS 192(SI), Y15, Y1  // sumw[i2+j]
	VSUBPS Y12, Y0, Y2        // sx2
	VSUBPS Y11, Y1, Y3        // sw2
	VMOVUPS 96(DI), Y4
	VSUBPS Y0, Y4, Y4         // sx3
	VMOVUPS 128(DI), Y5
	VSUBPS Y1, Y5, Y5         // sw3
	VMULPS 0(DI), Y2, Y2
	VADDPS Y2, Y10, Y2
	VMULPS 32(DI), Y4, Y4
	VADDPS Y4, Y2, Y4         // Σqx
	VMULPS 0(DI), Y3, Y3
	VMULPS 0(DI), Y3, Y3
	VADDPS Y3, Y9, Y3
	VMULPS 32(DI), Y5, Y5
	VMULPS 32(DI), Y5, Y5
	VADDPS Y5, Y3, Y5         // Σq²
	MOVQ $33, R9
	SUBQ R11, R9
	CMPQ R9, R12
	CMOVQGT R12, R9           // boundaries i2+j ≤ 32 in the vector
	NEGQ R9
	LEAQ 32(R13)(R9*8), R9    // the window of 2·that many ones
	VCMPPS $0x11, Y5, Y14, Y0 // 0 < Σq² (ordered: NaN fails)
	VANDPS (R9), Y0, Y0       // valid
	VDIVPS Y5, Y4, Y1         // scale = Σqx/Σq²
	VMULPS Y4, Y1, Y2         // S = scale·Σqx
	BESTLANE(4896) // 32*iq1sVecs
	ADDQ $32, DX
	ADDQ $4, R11
	ADDQ $16, SI
	CMPQ R11, $32
	JLE  si2loop
	INCQ R10
	CMPQ R10, $32
	JLE  si1loop

	BESTSTORE(4896) // 32*iq1sVecs
	RET

// func iq1sPassAVX2(c *[16]float32, tab *float32, out *[32]float32) int
// Lanes: i2 .. i2+7. Rows of tab are 48 floats (192 bytes) apart: sumx,
// sumw. c: see the iq1sC* constants (iquants_iq1.go).
TEXT ·iq1sPassAVX2(SB), NOSPLIT, $0-32
	MOVQ c+0(FP), AX
	MOVQ tab+8(FP), SI
	MOVQ out+16(FP), DI
	VMOVUPS 0(SI), Y0   // sumx[i2]
	VMOVUPS 192(SI), Y1 // sumw[i2]
	VBROADCASTSS 0(AX), Y2
	VSUBPS Y2, Y0, Y2 // sx2 = sumx[i2] - sumx[i1]
	VBROADCASTSS 4(AX), Y3
	VSUBPS Y3, Y1, Y3 // sw2
	VBROADCASTSS 8(AX), Y4
	VSUBPS Y0, Y4, Y4 // sx3 = sumx[32] - sumx[i2]
	VBROADCASTSS 12(AX), Y5
	VSUBPS Y1, Y5, Y5 // sw3

	VBROADCASTSS 32(AX), Y15 // best
	VXORPS Y14, Y14, Y14     // 0
	VXORPS Y13, Y13, Y13     // lanes that pass

	// shift +1: v1 = x_p[1], v2 = x_p[2]
	VBROADCASTSS 36(AX), Y6
	VBROADCASTSS 40(AX), Y7
	VMULPS Y6, Y2, Y8
	VBROADCASTSS 16(AX), Y9
	VADDPS Y8, Y9, Y8 // px0 + sx2*v1
	VMULPS Y7, Y4, Y9
	VADDPS Y9, Y8, Y8 // Σqx
	VMULPS Y6, Y3, Y9
	VMULPS Y6, Y9, Y9
	VBROADCASTSS 24(AX), Y10
	VADDPS Y9, Y10, Y9 // pw0 + sw2*v1*v1
	VMULPS Y7, Y5, Y10
	VMULPS Y7, Y10, Y10
	VADDPS Y10, Y9, Y9 // Σq²
	VMOVUPS Y8, 0(DI)
	VMOVUPS Y9, 32(DI)
	PASS(Y8, Y9, Y10, Y11, Y14, Y15, Y13)

	// shift -1: v1 = x_m[1], v2 = x_m[2]
	VBROADCASTSS 44(AX), Y6
	VBROADCASTSS 48(AX), Y7
	VMULPS Y6, Y2, Y8
	VBROADCASTSS 20(AX), Y9
	VADDPS Y8, Y9, Y8
	VMULPS Y7, Y4, Y9
	VADDPS Y9, Y8, Y8
	VMULPS Y6, Y3, Y9
	VMULPS Y6, Y9, Y9
	VBROADCASTSS 28(AX), Y10
	VADDPS Y9, Y10, Y9
	VMULPS Y7, Y5, Y10
	VMULPS Y7, Y10, Y10
	VADDPS Y10, Y9, Y9
	VMOVUPS Y8, 64(DI)
	VMOVUPS Y9, 96(DI)
	PASS(Y8, Y9, Y10, Y11, Y14, Y15, Y13)

	VMOVMSKPS Y13, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

DATA iq1consts<>+0(SB)/4, $0
DATA iq1consts<>+4(SB)/4, $1
DATA iq1consts<>+8(SB)/4, $2
DATA iq1consts<>+12(SB)/4, $3
DATA iq1consts<>+16(SB)/4, $4
DATA iq1consts<>+20(SB)/4, $5
DATA iq1consts<>+24(SB)/4, $6
DATA iq1consts<>+28(SB)/4, $7
DATA iq1consts<>+44(SB)/4, $0 // iq1mSearchAVX2's lane permutation
DATA iq1consts<>+48(SB)/4, $0
DATA iq1consts<>+52(SB)/4, $0
DATA iq1consts<>+56(SB)/4, $0
DATA iq1consts<>+60(SB)/4, $1
DATA iq1consts<>+64(SB)/4, $1
DATA iq1consts<>+68(SB)/4, $1
DATA iq1consts<>+72(SB)/4, $1
DATA iq1consts<>+76(SB)/4, $0xff7fffff // -FLT_MAX
DATA iq1consts<>+80(SB)/4, $0xff800000 // -inf
DATA iq1consts<>+84(SB)/4, $0 // iq1Rank16AVX2, iq1Rank32AVX2: 8 zeros, 7 ones; lane i of the window at
// 84+4*(7-j) is set where i > j
DATA iq1consts<>+88(SB)/4, $0
DATA iq1consts<>+92(SB)/4, $0
DATA iq1consts<>+96(SB)/4, $0
DATA iq1consts<>+100(SB)/4, $0
DATA iq1consts<>+104(SB)/4, $0
DATA iq1consts<>+108(SB)/4, $0
DATA iq1consts<>+112(SB)/4, $0
DATA iq1consts<>+116(SB)/4, $-1
DATA iq1consts<>+120(SB)/4, $-1
DATA iq1consts<>+124(SB)/4, $-1
DATA iq1consts<>+128(SB)/4, $-1
DATA iq1consts<>+132(SB)/4, $-1
DATA iq1consts<>+136(SB)/4, $-1
DATA iq1consts<>+140(SB)/4, $-1
DATA iq1consts<>+144(SB)/4, $-1 // 8 ones, 8 zeros: the window at 144+4*(8-m) has m lanes set
DATA iq1consts<>+148(SB)/4, $-1
DATA iq1consts<>+152(SB)/4, $-1
DATA iq1consts<>+156(SB)/4, $-1
DATA iq1consts<>+160(SB)/4, $-1
DATA iq1consts<>+164(SB)/4, $-1
DATA iq1consts<>+168(SB)/4, $-1
DATA iq1consts<>+172(SB)/4, $-1
DATA iq1consts<>+176(SB)/4, $0
DATA iq1consts<>+180(SB)/4, $0
DATA iq1consts<>+184(SB)/4, $0
DATA iq1consts<>+188(SB)/4, $0
DATA iq1consts<>+192(SB)/4, $0
DATA iq1consts<>+196(SB)/4, $0
DATA iq1consts<>+200(SB)/4, $0
DATA iq1consts<>+204(SB)/4, $0
DATA iq1consts<>+208(SB)/4, $0 // iq1sBestAVX2's lane permutation: i2+j in lanes 2j, 2j+1
DATA iq1consts<>+212(SB)/4, $0
DATA iq1consts<>+216(SB)/4, $1
DATA iq1consts<>+220(SB)/4, $1
DATA iq1consts<>+224(SB)/4, $2
DATA iq1consts<>+228(SB)/4, $2
DATA iq1consts<>+232(SB)/4, $3
DATA iq1consts<>+236(SB)/4, $3
GLOBL iq1consts<>(SB), RODATA|NOPTR, $240

// The rank sorts (iq1Rank16AVX2, iq1Rank32AVX2): the values' lanes i are in
// Y0-Y3, their ranks in Y4-Y7. For each j, x_j (broadcast in Y8) is counted
// in the rank of lane i when it sorts before x_i: x_j < x_i, or x_j == x_i
// and j < i. RLT counts x_j < x_i (a vector of lanes i < j), RLE x_j <= x_i
// (lanes i > j), RMIX per lane by the mask at (R10): lane i set where
// i > j (the vector holding j).
#define RLT(v, acc) \
	VCMPPS $0x11, v, Y8, Y9; \
	VPSUBD Y9, acc, acc

#define RLE(v, acc) \
	VCMPPS $0x12, v, Y8, Y9; \
	VPSUBD Y9, acc, acc

#define RMIX(v, acc) \
	VCMPPS $0x11, v, Y8, Y9;  \
	VCMPPS $0x12, v, Y8, Y10; \
	VANDPS (R10), Y10, Y10;   \
	VORPS  Y10, Y9, Y9;       \
	VPSUBD Y9, acc, acc

// RSTART sets the loop over the eight j of one vector: SI at x_j, R10 at
// the mask for j%8 = 0 (the window of iq1consts+84 starting at entry 7),
// CX counting.
#define RSTART(v) \
	LEAQ (32*v)(BX), SI;            \
	LEAQ iq1consts<>+112(SB), R10;  \
	MOVQ $8, CX

// RNEXT steps to the next j and loops to label while the vector has one.
#define RNEXT \
	ADDQ $4, SI;   \
	SUBQ $4, R10;  \
	DECQ CX

// RPLACE writes idx[rank_i] = i for the n ranks stored at 0(SP).
#define RPLACE(n) \
	XORQ CX, CX;             \
rplace:                      \
	MOVL (SP)(CX*4), AX;     \
	MOVB CX, (DI)(AX*1);     \
	INCQ CX;                 \
	CMPQ CX, $n;             \
	JLT  rplace

// func iq1Rank16AVX2(xb *[16]float32, idx *[16]uint8) bool
// The stable order of iq1SortOrder for 16 values by ranks: value i goes to
// the count of values that sort before it. False (idx untouched) when a
// value is NaN, where the insertion sort's order is not a ranking.
TEXT ·iq1Rank16AVX2(SB), NOSPLIT, $64-17
	MOVQ xb+0(FP), BX
	MOVQ idx+8(FP), DI
	VMOVUPS 0(BX), Y0
	VMOVUPS 32(BX), Y1
	VCMPPS $3, Y0, Y0, Y2
	VCMPPS $3, Y1, Y1, Y3
	VORPS Y3, Y2, Y2
	VMOVMSKPS Y2, AX
	TESTL AX, AX
	JNZ  r16nan
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	RSTART(0)
r16a:
	VBROADCASTSS (SI), Y8
	RMIX(Y0, Y4)
	RLE(Y1, Y5)
	RNEXT
	JNZ  r16a
	RSTART(1)
r16b:
	VBROADCASTSS (SI), Y8
	RLT(Y0, Y4)
	RMIX(Y1, Y5)
	RNEXT
	JNZ  r16b
	VMOVDQU Y4, 0(SP)
	VMOVDQU Y5, 32(SP)
	VZEROUPPER
	RPLACE(16)
	MOVB $1, ret+16(FP)
	RET

r16nan:
	VZEROUPPER
	MOVB $0, ret+16(FP)
	RET

// func iq1Rank32AVX2(xb *[32]float32, idx *[32]uint8) bool
// iq1Rank16AVX2 for 32 values (IQ1_S).
TEXT ·iq1Rank32AVX2(SB), NOSPLIT, $128-17
	MOVQ xb+0(FP), BX
	MOVQ idx+8(FP), DI
	VMOVUPS 0(BX), Y0
	VMOVUPS 32(BX), Y1
	VMOVUPS 64(BX), Y2
	VMOVUPS 96(BX), Y3
	VCMPPS $3, Y0, Y0, Y4
	VCMPPS $3, Y1, Y1, Y5
	VCMPPS $3, Y2, Y2, Y6
	VCMPPS $3, Y3, Y3, Y7
	VORPS Y5, Y4, Y4
	VORPS Y7, Y6, Y6
	VORPS Y6, Y4, Y4
	VMOVMSKPS Y4, AX
	TESTL AX, AX
	JNZ  r32nan
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	RSTART(0)
r32a:
	VBROADCASTSS (SI), Y8
	RMIX(Y0, Y4)
	RLE(Y1, Y5)
	RLE(Y2, Y6)
	RLE(Y3, Y7)
	RNEXT
	JNZ  r32a
	RSTART(1)
r32b:
	VBROADCASTSS (SI), Y8
	RLT(Y0, Y4)
	RMIX(Y1, Y5)
	RLE(Y2, Y6)
	RLE(Y3, Y7)
	RNEXT
	JNZ  r32b
	RSTART(2)
r32c:
	VBROADCASTSS (SI), Y8
	RLT(Y0, Y4)
	RLT(Y1, Y5)
	RMIX(Y2, Y6)
	RLE(Y3, Y7)
	RNEXT
	JNZ  r32c
	RSTART(3)
r32d:
	VBROADCASTSS (SI), Y8
	RLT(Y0, Y4)
	RLT(Y1, Y5)
	RLT(Y2, Y6)
	RMIX(Y3, Y7)
	RNEXT
	JNZ  r32d
	VMOVDQU Y4, 0(SP)
	VMOVDQU Y5, 32(SP)
	VMOVDQU Y6, 64(SP)
	VMOVDQU Y7, 96(SP)
	VZEROUPPER
	RPLACE(32)
	MOVB $1, ret+16(FP)
	RET

r32nan:
	VZEROUPPER
	MOVB $0, ret+16(FP)
	RET
