//go:build !purego

package quantize

// The amd64 kernels of Q8_K, Q8_0, Q8_1 and the ternary types' trits
// (q8_amd64.s); the purego build tag turns them off, and
// TestEncodeAsmMatchesGeneric and TestEncodeFiniteDifferential check them
// against the Go forms.

//go:noescape
func q8KAVX2(dst *byte, src *float32, nblocks int) int

// encodeFiniteQ8K is quantize_row_q8_K_ref fused with the finiteness check
// (codec.encodeFinite): it stops, returning false, at the first block whose
// largest magnitude has the exponent bits of a NaN or an infinity. The
// kernel leaves the blocks whose maximum is zero, tiny or not finite to the
// Go form.
func encodeFiniteQ8K(dst []byte, src, _ []float32) bool {
	nb := len(src) / qkK
	if !useAVX2 {
		return encodeFiniteQ8KGeneric(dst, src, nil)
	}
	dst = dst[:nb*q8KBytes]
	for i := 0; i < nb; i++ {
		i += q8KAVX2(&dst[i*q8KBytes], &src[i*qkK], nb-i)
		if i < nb && !encodeFiniteQ8KGeneric(dst[i*q8KBytes:(i+1)*q8KBytes], src[i*qkK:(i+1)*qkK], nil) {
			return false
		}
	}
	return true
}

//go:noescape
func q8x32AVX2(dst *byte, src *float32, nblocks int, q81 bool) int

// encodeFiniteQ8_0 is quantize_row_q8_0_ref fused with the finiteness check
// (codec.encodeFinite): it stops, returning false, at the first block whose
// largest magnitude has the exponent bits of a NaN or an infinity. The
// kernel leaves the blocks whose maximum is zero, tiny or not finite to the
// Go form.
func encodeFiniteQ8_0(dst []byte, src, _ []float32) bool {
	return encodeFiniteQ8x32(dst, src, false, q8_0Bytes, encodeFiniteQ8_0Generic)
}

// encodeFiniteQ8_1 is quantize_row_q8_1_ref fused with the finiteness
// check, as encodeFiniteQ8_0.
func encodeFiniteQ8_1(dst []byte, src, _ []float32) bool {
	return encodeFiniteQ8x32(dst, src, true, q8_1Bytes, encodeFiniteQ8_1Generic)
}

// encodeFiniteQ8x32 runs q8x32AVX2 over the blocks of 32, handing each
// block the kernel stops at to the Go form generic.
func encodeFiniteQ8x32(dst []byte, src []float32, q81 bool, blockBytes int, generic func(dst []byte, src, imatrix []float32) bool) bool {
	nb := len(src) / qk8
	if !useAVX2 {
		return generic(dst, src, nil)
	}
	dst = dst[:nb*blockBytes]
	for i := 0; i < nb; i++ {
		i += q8x32AVX2(&dst[i*blockBytes], &src[i*qk8], nb-i, q81)
		if i < nb && !generic(dst[i*blockBytes:(i+1)*blockBytes], src[i*qk8:(i+1)*qk8], nil) {
			return false
		}
	}
	return true
}

//go:noescape
func ternaryTritsAVX2(t *byte, x *float32) (d float32, ok bool)

// ternaryTritsAsm is ternaryTrits with the kernel for a block of 256 finite
// values whose largest magnitude is at least 2^-100; it reports false
// (leaving the block to the Go form) for the others or without AVX2.
func ternaryTritsAsm(t *[qkTQ]uint8, x []float32) (float32, bool) {
	if !useAVX2 {
		return 0, false
	}
	return ternaryTritsAVX2(&t[0], &x[:qkTQ][0])
}
