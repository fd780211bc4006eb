//go:build !amd64 || purego

package quantize

// encodeFiniteQ8K is quantize_row_q8_K_ref fused with the finiteness check
// (codec.encodeFinite): it stops, returning false, at the first block whose
// largest magnitude has the exponent bits of a NaN or an infinity.
func encodeFiniteQ8K(dst []byte, src, _ []float32) bool {
	return encodeFiniteQ8KGeneric(dst, src, nil)
}

// encodeFiniteQ8_0 is quantize_row_q8_0_ref fused with the finiteness check
// (codec.encodeFinite): it stops, returning false, at the first block whose
// largest magnitude has the exponent bits of a NaN or an infinity.
func encodeFiniteQ8_0(dst []byte, src, _ []float32) bool {
	return encodeFiniteQ8_0Generic(dst, src, nil)
}

// encodeFiniteQ8_1 is quantize_row_q8_1_ref fused with the finiteness check
// (codec.encodeFinite): it stops, returning false, at the first block whose
// largest magnitude has the exponent bits of a NaN or an infinity.
func encodeFiniteQ8_1(dst []byte, src, _ []float32) bool {
	return encodeFiniteQ8_1Generic(dst, src, nil)
}

// ternaryTritsAsm reports false: without the amd64 kernel ternaryTrits
// runs in Go.
func ternaryTritsAsm(t *[qkTQ]uint8, x []float32) (float32, bool) { return 0, false }
