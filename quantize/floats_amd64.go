//go:build !purego

package quantize

import "golang.org/x/sys/cpu"

// The amd64 kernels of the float conversions and finiteness scans
// (floats_amd64.s); the purego build tag turns them off, and
// floats_amd64_test.go checks them against the Go forms.

//go:noescape
func f16ToF32F16C(dst *float32, src *byte, n int)

//go:noescape
func bf16ToF32AVX2(dst *float32, src *byte, n int)

//go:noescape
func f32CopyFiniteAVX2(dst *byte, src *float32, n int) bool

//go:noescape
func f32ToF16FiniteF16C(dst *byte, src *float32, n int) bool

//go:noescape
func f32ToBF16FiniteAVX2(dst *byte, src *float32, n int) bool

//go:noescape
func halvesFiniteAVX2(p *byte, n int, exp uint16) bool

//go:noescape
func floatsFiniteAVX2(p *float32, n int) bool

// useF16C selects VCVTPH2PS for the F16 decoder.
var useF16C = cpu.X86.HasAVX && cpu.X86.HasF16C

func encodeFiniteF32(dst []byte, src []float32, imatrix []float32) bool {
	n := len(src) &^ 15
	if !useAVX2 || n == 0 {
		return encodeFiniteF32Generic(dst, src, imatrix)
	}
	dst = dst[:4*len(src)]
	return f32CopyFiniteAVX2(&dst[0], &src[0], n) && encodeFiniteF32Generic(dst[4*n:], src[n:], imatrix)
}

func encodeFiniteF16(dst []byte, src []float32, imatrix []float32) bool {
	n := len(src) &^ 15
	if !useF16C || n == 0 {
		return encodeFiniteF16Generic(dst, src, imatrix)
	}
	dst = dst[:2*len(src)]
	return f32ToF16FiniteF16C(&dst[0], &src[0], n) && encodeFiniteF16Generic(dst[2*n:], src[n:], imatrix)
}

func encodeFiniteBF16(dst []byte, src []float32, imatrix []float32) bool {
	n := len(src) &^ 15
	if !useAVX2 || n == 0 {
		return encodeFiniteBF16Generic(dst, src, imatrix)
	}
	dst = dst[:2*len(src)]
	return f32ToBF16FiniteAVX2(&dst[0], &src[0], n) && encodeFiniteBF16Generic(dst[2*n:], src[n:], imatrix)
}

func decodeRowF16(dst []float32, src []byte) {
	n := len(dst) &^ 31
	if !useF16C || n == 0 {
		decodeRowF16Generic(dst, src)
		return
	}
	src = src[:2*len(dst)]
	f16ToF32F16C(&dst[0], &src[0], n)
	decodeRowF16Generic(dst[n:], src[2*n:])
}

func decodeRowBF16(dst []float32, src []byte) {
	n := len(dst) &^ 31
	if !useAVX2 || n == 0 {
		decodeRowBF16Generic(dst, src)
		return
	}
	src = src[:2*len(dst)]
	bf16ToF32AVX2(&dst[0], &src[0], n)
	decodeRowBF16Generic(dst[n:], src[2*n:])
}

// halvesFinite reports whether no 16-bit value of data (little-endian, an
// even number of bytes) has all the bits of exp set.
func halvesFinite(data []byte, exp uint16) bool {
	n := len(data) / 2 &^ 31
	if !useAVX2 || n == 0 {
		return halvesFiniteGeneric(data, exp)
	}
	return halvesFiniteAVX2(&data[0], n, exp) && halvesFiniteGeneric(data[2*n:], exp)
}

// floatsFinite reports whether src holds no NaN and no infinity.
func floatsFinite(src []float32) bool {
	n := len(src) &^ 15
	if !useAVX2 || n == 0 {
		return firstNonFiniteGeneric(src) < 0
	}
	return floatsFiniteAVX2(&src[0], n) && firstNonFiniteGeneric(src[n:]) < 0
}
