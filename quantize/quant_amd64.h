// Shared by the quantizers' kernels (q8_amd64.s, lowbit_amd64.s,
// fp4_amd64.s).

// PACKPERM defines the static symbol packperm<>: the dword order 0,4,1,5,
// 2,6,3,7 that undoes VPACKSSDW/VPACKSSWB's per-lane interleaving (VPERMD),
// so that 32 int32 in four vectors become 32 bytes in order.
#define PACKPERM \
	DATA packperm<>+0(SB)/4, $0;  \
	DATA packperm<>+4(SB)/4, $4;  \
	DATA packperm<>+8(SB)/4, $1;  \
	DATA packperm<>+12(SB)/4, $5; \
	DATA packperm<>+16(SB)/4, $2; \
	DATA packperm<>+20(SB)/4, $6; \
	DATA packperm<>+24(SB)/4, $3; \
	DATA packperm<>+28(SB)/4, $7; \
	GLOBL packperm<>(SB), RODATA|NOPTR, $32

// HMAXUD4 sets the low dword of X0 (and AX) to the largest unsigned dword
// of Y0-Y3. Clobbers Y1-Y3.
#define HMAXUD4 \
	VPMAXUD      Y1, Y0, Y0; \
	VPMAXUD      Y3, Y2, Y2; \
	VPMAXUD      Y2, Y0, Y0; \
	VEXTRACTI128 $1, Y0, X1; \
	VPMAXUD      X1, X0, X0; \
	VPSHUFD      $0x4e, X0, X1; \
	VPMAXUD      X1, X0, X0; \
	VPSHUFD      $0xb1, X0, X1; \
	VPMAXUD      X1, X0, X0; \
	VMOVD        X0, AX
