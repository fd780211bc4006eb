package quantize

import (
	"encoding/binary"
	"math"
)

// C rounding and conversion calls as the reference build of ggml performs
// them (gcc 12, x86-64, glibc; see testdata/golden/README.txt). A C
// conversion of NaN or of an out-of-range float to an integer is undefined;
// x86-64 compiles it to cvttss2si, which yields the "integer indefinite"
// value (the most negative integer). The encoders below meet such values
// only for blocks whose scale underflows (1/d = +Inf), and reproduce ggml's
// bytes for them on every GOARCH instead of inheriting Go's own
// platform-dependent conversion.

// cRoundf is C's roundf: nearest integer, halfway cases away from zero.
// The float64 detour is exact both ways.
func cRoundf(x float32) float32 { return float32(math.Round(float64(x))) }

// cTruncInt32 is a C (int)x conversion of a float on x86-64: truncation
// toward zero, and math.MinInt32 for NaN or a value outside int32.
func cTruncInt32(x float32) int32 {
	// -2147483904 is the float32 below -2^31; 2147483648 is 2^31.
	if !(x > -2147483904 && x < 2147483648) {
		return math.MinInt32
	}
	return int32(x)
}

// cLroundf is glibc's lroundf: nearest integer, halfway cases away from
// zero; NaN and values outside the int64 range give math.MinInt64 (glibc
// falls back to (long)x there, i.e. cvttss2si).
func cLroundf(x float32) int64 {
	f := float64(x)
	if !(f >= -(1<<63) && f < 1<<63) {
		return math.MinInt64
	}
	return int64(math.Round(f))
}

// roundHalfAway is cRoundf converted to int32 for |s| < 2^22: the fast
// path of the encoders' roundf and lroundf calls, once the block's largest
// |x·id| is known to be in range. It truncates s + copysign(0.5⁻, s), where
// 0.5⁻ = 0.49999997 is the float32 just below 0.5: the rounded sum never
// crosses the next integer unless the fraction of |s| is at least 0.5 (with
// 0.5 itself the sum would, for |s| = 0.49999997), so no branch is needed.
// TestRoundHalfAway checks every half-integer and its neighbours; it was
// also checked against math.Round on all 2^31 inputs below 2^22.
func roundHalfAway(s float32) int32 {
	return int32(s + math.Float32frombits(math.Float32bits(s)&0x80000000|0x3EFFFFFF))
}

// putHalf stores the half-precision encoding of f at b[0:2] (little endian,
// as every ggml_half field).
func putHalf(b []byte, f float32) { binary.LittleEndian.PutUint16(b, FP32ToFP16(f)) }

// halfAt reads the ggml_half at b[0:2] as a float32.
func halfAt(b []byte) float32 { return FP16ToFP32(binary.LittleEndian.Uint16(b)) }
