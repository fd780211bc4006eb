//go:build !purego

#include "textflag.h"
#include "quant_amd64.h"

PACKPERM

DATA iq3shift<>+0(SB)/4, $0
DATA iq3shift<>+4(SB)/4, $3
DATA iq3shift<>+8(SB)/4, $6
DATA iq3shift<>+12(SB)/4, $9
DATA iq3shift<>+16(SB)/4, $0
DATA iq3shift<>+20(SB)/4, $3
DATA iq3shift<>+24(SB)/4, $6
DATA iq3shift<>+28(SB)/4, $9
GLOBL iq3shift<>(SB), RODATA|NOPTR, $32

DATA iq3lane<>+0(SB)/4, $0
DATA iq3lane<>+4(SB)/4, $1
DATA iq3lane<>+8(SB)/4, $2
DATA iq3lane<>+12(SB)/4, $3
DATA iq3lane<>+16(SB)/4, $4
DATA iq3lane<>+20(SB)/4, $5
DATA iq3lane<>+24(SB)/4, $6
DATA iq3lane<>+28(SB)/4, $7
GLOBL iq3lane<>(SB), RODATA|NOPTR, $32

DATA iq3c<>+0(SB)/4, $1.0
DATA iq3c<>+4(SB)/4, $0.5
DATA iq3c<>+8(SB)/4, $12582912.0
DATA iq3c<>+12(SB)/4, $0x007fffff
DATA iq3c<>+16(SB)/4, $0x00400000
DATA iq3c<>+20(SB)/4, $7
DATA iq3c<>+24(SB)/4, $0x7f7fffff // FLT_MAX
DATA iq3c<>+28(SB)/4, $8
GLOBL iq3c<>(SB), RODATA|NOPTR, $32

// LEVELS turns the eight values at off(SI) into the levels
// clamp(nearest_int(0.5·(id·x - 1)), 0, 7), ggml's nearest_int by its
// 1.5·2^23 addition, shifted to their place in the packed quadruple.
#define LEVELS(off, r) \
	VMULPS   off(SI), Y15, r; \
	VSUBPS   Y14, r, r;       \
	VMULPS   Y13, r, r;       \
	VADDPS   Y12, r, r;       \
	VPAND    Y11, r, r;       \
	VPSUBD   Y10, r, r;       \
	VPMAXSD  Y8, r, r;        \
	VPMINSD  Y9, r, r;        \
	VPSLLVD  Y7, r, r

// func iq3GroupsAVX2(xval, waux *[32]float32, id, scale float32, kmap *[4096]int32, blocks *iq3NbrBlock, idx *[8]int32) uint8
TEXT ·iq3GroupsAVX2(SB), NOSPLIT, $0-49
	MOVQ xval+0(FP), SI
	MOVQ waux+8(FP), DX
	MOVQ kmap+24(FP), R8
	MOVQ blocks+32(FP), BX
	MOVQ idx+40(FP), DI

	VBROADCASTSS id+16(FP), Y15
	VBROADCASTSS iq3c<>+0(SB), Y14
	VBROADCASTSS iq3c<>+4(SB), Y13
	VBROADCASTSS iq3c<>+8(SB), Y12
	VPBROADCASTD iq3c<>+12(SB), Y11
	VPBROADCASTD iq3c<>+16(SB), Y10
	VPBROADCASTD iq3c<>+20(SB), Y9
	VPXOR        Y8, Y8, Y8
	VMOVDQU      iq3shift<>(SB), Y7
	LEVELS(0, Y0)
	LEVELS(32, Y1)
	LEVELS(64, Y2)
	LEVELS(96, Y3)
	// Sum each group's four shifted levels (disjoint bits): lanes g0, g2,
	// g4, g6, g1, g3, g5, g7, then in group order.
	VPHADDD Y1, Y0, Y0
	VPHADDD Y3, Y2, Y2
	VPHADDD Y2, Y0, Y0
	VMOVDQU packperm<>(SB), Y1
	VPERMD  Y0, Y1, Y0
	VPCMPEQD Y1, Y1, Y1
	VPGATHERDD Y1, (R8)(Y0*4), Y2
	VMOVDQU    Y2, (DI)
	VMOVMSKPS  Y2, AX
	MOVQ       AX, CX
	XORQ       $0xff, CX
	MOVB       CX, ret+48(FP)
	TESTQ      AX, AX
	JZ         done

	VBROADCASTSS scale+20(FP), Y8

group:
	// The lowest group off the grid: g in CX.
	BSFQ  AX, CX
	BTRQ  CX, AX
	MOVL  (DI)(CX*4), R10
	NOTL  R10
	MOVL  R10, R11
	ANDL  $7, R11         // blocks in the list
	MOVL  R11, R8
	SHRL  $3, R10
	IMUL3Q $160, R10, R10
	LEAQ  (BX)(R10*1), R9 // first block
	MOVQ  R9, R12
	MOVQ  CX, R14
	SHLQ  $4, R14
	LEAQ  (SI)(R14*1), R13
	ADDQ  DX, R14
	VBROADCASTSS 0(R13), Y0
	VBROADCASTSS 4(R13), Y1
	VBROADCASTSS 8(R13), Y2
	VBROADCASTSS 12(R13), Y3
	VBROADCASTSS 0(R14), Y4
	VBROADCASTSS 4(R14), Y5
	VBROADCASTSS 8(R14), Y6
	VBROADCASTSS 12(R14), Y7
	VBROADCASTSS iq3c<>+24(SB), Y9 // best
	VPXOR        Y10, Y10, Y10      // position of the best
	VMOVDQU      iq3lane<>(SB), Y11 // position

block:
	VMULPS 0(R9), Y8, Y13
	VSUBPS Y0, Y13, Y13
	VMULPS Y13, Y4, Y14
	VMULPS Y13, Y14, Y14
	VMULPS 32(R9), Y8, Y13
	VSUBPS Y1, Y13, Y13
	VMULPS Y13, Y5, Y15
	VMULPS Y13, Y15, Y15
	VADDPS Y15, Y14, Y14
	VMULPS 64(R9), Y8, Y13
	VSUBPS Y2, Y13, Y13
	VMULPS Y13, Y6, Y15
	VMULPS Y13, Y15, Y15
	VADDPS Y15, Y14, Y14
	VMULPS 96(R9), Y8, Y13
	VSUBPS Y3, Y13, Y13
	VMULPS Y13, Y7, Y15
	VMULPS Y13, Y15, Y15
	VADDPS Y15, Y14, Y14
	VCMPPS    $0x11, Y9, Y14, Y13 // d2 < best (NaN fails)
	VBLENDVPS Y13, Y14, Y9, Y9
	VBLENDVPS Y13, Y11, Y10, Y10
	VPBROADCASTD iq3c<>+28(SB), Y12
	VPADDD    Y12, Y11, Y11
	ADDQ      $160, R9
	DECL      R11
	JNZ       block

	// The smallest best, then the first position holding it.
	VPERM2F128   $1, Y9, Y9, Y13
	VMINPS       Y13, Y9, Y13
	VPERMILPS    $0x4e, Y13, Y14
	VMINPS       Y14, Y13, Y13
	VPERMILPS    $0xb1, Y13, Y14
	VMINPS       Y14, Y13, Y13
	VCMPPS       $0, Y13, Y9, Y13
	CMPL         R8, $1
	JNE          multi
	// One block: its first lane holding the minimum is the first position.
	VMOVMSKPS    Y13, R10
	BSFL         R10, R10
	MOVL         128(R12)(R10*4), R10
	MOVL         R10, (DI)(CX*4)
	TESTQ        AX, AX
	JNZ          group
	JMP          done

multi:
	VPCMPEQD     Y14, Y14, Y14
	VPSRLD       $1, Y14, Y14     // INT32_MAX
	VBLENDVPS    Y13, Y10, Y14, Y14
	VEXTRACTI128 $1, Y14, X13
	VPMINSD      X13, X14, X14
	VPSHUFD      $0x4e, X14, X13
	VPMINSD      X13, X14, X14
	VPSHUFD      $0xb1, X14, X13
	VPMINSD      X13, X14, X14
	VMOVD        X14, R10
	MOVL         R10, R11
	SHRL         $3, R10
	ANDL         $7, R11
	IMUL3Q       $160, R10, R10
	ADDQ         R10, R12
	MOVL         128(R12)(R11*4), R10
	MOVL         R10, (DI)(CX*4)
	TESTQ        AX, AX
	JNZ          group

done:
	VZEROUPPER
	RET
