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

// func iq1mPassAVX2(c *[16]float32, tab *float32, out *[64]float32) int
// Lanes: i2 .. i2+7. Rows of tab are 24 floats (96 bytes) apart: px[0],
// px[1], pw[0], pw[1]. c: see the iq1mC* constants (iq1_amd64.go).
TEXT ·iq1mPassAVX2(SB), NOSPLIT, $0-32
	MOVQ c+0(FP), AX
	MOVQ tab+8(FP), SI
	MOVQ out+16(FP), DI
	VMOVUPS 0(SI), Y0   // px0[i2]
	VMOVUPS 96(SI), Y1  // px1[i2]
	VMOVUPS 192(SI), Y2 // pw0[i2]
	VMOVUPS 288(SI), Y3 // pw1[i2]

	VBROADCASTSS 0(AX), Y4
	VADDPS Y0, Y4, Y0 // sx0 = px0[i1] + px0[i2]
	VBROADCASTSS 4(AX), Y4
	VADDPS Y1, Y4, Y1 // sx1
	VBROADCASTSS 8(AX), Y4
	VSUBPS Y0, Y4, Y5 // qxp0 = txp0 - sx0
	VBROADCASTSS 12(AX), Y4
	VSUBPS Y1, Y4, Y6 // qxp1
	VBROADCASTSS 16(AX), Y4
	VSUBPS Y0, Y4, Y7 // qxm0
	VBROADCASTSS 20(AX), Y4
	VSUBPS Y1, Y4, Y8 // qxm1

	VBROADCASTSS 40(AX), Y9  // cp2
	VBROADCASTSS 44(AX), Y10 // cm2
	VMULPS Y9, Y2, Y11
	VBROADCASTSS 24(AX), Y4
	VADDPS Y11, Y4, Y11 // q2p0 = a1p0 + pw0[i2]*cp2
	VMULPS Y9, Y3, Y12
	VBROADCASTSS 28(AX), Y4
	VADDPS Y12, Y4, Y12 // q2p1
	VMULPS Y10, Y2, Y13
	VBROADCASTSS 32(AX), Y4
	VADDPS Y13, Y4, Y13 // q2m0 = a1m0 + pw0[i2]*cm2
	VMULPS Y10, Y3, Y14
	VBROADCASTSS 36(AX), Y4
	VADDPS Y14, Y4, Y14 // q2m1

	VBROADCASTSS 48(AX), Y15 // best
	VXORPS Y9, Y9, Y9        // 0
	VXORPS Y3, Y3, Y3        // lanes that pass

	// k = 0 (+,+): Σqx and Σq² stored at out[16k:16k+16]
	VADDPS Y6, Y5, Y0         // sqx
	VADDPS Y12, Y11, Y1       // sq2
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	PASS(Y0, Y1, Y0, Y2, Y9, Y15, Y3)

	// k = 1 (+,-): Σqx and Σq² stored at out[16k:16k+16]
	VADDPS Y8, Y5, Y0
	VADDPS Y14, Y11, Y1
	VMOVUPS Y0, 64(DI)
	VMOVUPS Y1, 96(DI)
	PASS(Y0, Y1, Y0, Y2, Y9, Y15, Y3)

	// k = 2 (-,+): Σqx and Σq² stored at out[16k:16k+16]
	VADDPS Y6, Y7, Y0
	VADDPS Y12, Y13, Y1
	VMOVUPS Y0, 128(DI)
	VMOVUPS Y1, 160(DI)
	PASS(Y0, Y1, Y0, Y2, Y9, Y15, Y3)

	// k = 3 (-,-): Σqx and Σq² stored at out[16k:16k+16]
	VADDPS Y8, Y7, Y0
	VADDPS Y14, Y13, Y1
	VMOVUPS Y0, 192(DI)
	VMOVUPS Y1, 224(DI)
	PASS(Y0, Y1, Y0, Y2, Y9, Y15, Y3)

	VMOVMSKPS Y3, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
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
