//go:build !amd64 || purego

package quantize

// Without the amd64 assembly, the float conversions and scans run in plain Go.

func encodeFiniteF32(dst []byte, src []float32, imatrix []float32) bool {
	return encodeFiniteF32Generic(dst, src, imatrix)
}

func encodeFiniteF16(dst []byte, src []float32, imatrix []float32) bool {
	return encodeFiniteF16Generic(dst, src, imatrix)
}

func encodeFiniteBF16(dst []byte, src []float32, imatrix []float32) bool {
	return encodeFiniteBF16Generic(dst, src, imatrix)
}

func decodeRowF16(dst []float32, src []byte) { decodeRowF16Generic(dst, src) }

func decodeRowBF16(dst []float32, src []byte) { decodeRowBF16Generic(dst, src) }

// halvesFinite reports whether no 16-bit value of data (little-endian, an
// even number of bytes) has all the bits of exp set.
func halvesFinite(data []byte, exp uint16) bool { return halvesFiniteGeneric(data, exp) }

// floatsFinite reports whether src holds no NaN and no infinity.
func floatsFinite(src []float32) bool { return firstNonFiniteGeneric(src) < 0 }
