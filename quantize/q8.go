package quantize

import (
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// Q8_0 and Q8_1: 32 values per block, an fp16 scale d = amax/127 and the
// values as int8 (ggml-common.h block_q8_0 {d, qs[32]}, block_q8_1
// {d, s, qs[32]}).
//
// quantize_q8_0 ignores the importance weights and runs
// quantize_row_q8_0_ref over all rows (ggml-quants.c). Q8_1 is an
// activation format: ggml_quantize_chunk refuses it and ggml has no decoder
// for it, so it is encode-only here, with quantize_row_q8_1_ref.

const (
	qk8       = 32
	q8_0Bytes = 34
	q8_1Bytes = 36
)

func init() {
	register(gguf.Q8_0, &codec{encodeRow: encodeRowQ8_0, encodeFinite: encodeFiniteQ8_0, decodeRow: decodeRowQ8_0})
	register(gguf.Q8_1, &codec{encodeRow: encodeRowQ8_1, encodeFinite: encodeFiniteQ8_1})
}

// q8Scale returns d = amax/127 and its inverse, 0 when d is 0 (ggml's
// `d ? 1.0f/d : 0.0f`). A subnormal d gives id = +Inf; the values then
// convert as C does (see cTruncInt32).
func q8Scale(amax float32) (d, id float32) {
	d = amax / 127
	if d != 0 {
		id = 1 / d
	}
	return d, id
}

// q8Quantize stores `(int8_t) roundf(x[j]*id)` in qs[j]. roundf's float
// result goes through a 32-bit cvttss2si, whose low byte is kept. When
// every |x·id| is below 2^22 (always, unless 1/d overflowed), the fast
// roundHalfAway is exact; otherwise each value takes the general path.
func q8Quantize(qs []byte, x []float32, amax, id float32) {
	qs = qs[:len(x)]
	if float32(amax*id) < 0x1p22 {
		for j, v := range x {
			qs[j] = byte(roundHalfAway(float32(v * id)))
		}
		return
	}
	for j, v := range x {
		qs[j] = byte(cTruncInt32(cRoundf(float32(v * id))))
	}
}

func encodeRowQ8_0(dst []byte, src []float32, _ []float32) { encodeFiniteQ8_0(dst, src, nil) }

// encodeFiniteQ8_0Generic is quantize_row_q8_0_ref fused with the
// finiteness check, in plain Go (encodeFiniteQ8_0 runs on vectors with
// AVX2).
func encodeFiniteQ8_0Generic(dst []byte, src []float32, _ []float32) bool {
	for i := 0; i < len(src)/qk8; i++ {
		x := src[i*qk8 : (i+1)*qk8]
		b := dst[i*q8_0Bytes : (i+1)*q8_0Bytes]
		bits := absMaxBits(x)
		if bits >= 0x7F800000 {
			return false
		}
		amax := math.Float32frombits(bits)
		d, id := q8Scale(amax)
		putHalf(b, d)
		q8Quantize(b[2:2+qk8], x, amax, id)
	}
	return true
}

// decodeRowQ8_0 is dequantize_row_q8_0: qs[j]*d.
func decodeRowQ8_0(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk8; i++ {
		b := src[i*q8_0Bytes : (i+1)*q8_0Bytes]
		y := dst[i*qk8 : (i+1)*qk8]
		d := halfAt(b)
		qs := b[2 : 2+qk8]
		for j := range y {
			y[j] = float32(int8(qs[j])) * d
		}
	}
}

// encodeRowQ8_1 is quantize_row_q8_1_ref (encodeFiniteQ8_1 on finite rows).
func encodeRowQ8_1(dst []byte, src []float32, _ []float32) { encodeFiniteQ8_1(dst, src, nil) }

// encodeFiniteQ8_1Generic is quantize_row_q8_1_ref (as Q8_0, plus s =
// fp16(sum·d) where sum adds the stored int8 values) fused with the
// finiteness check, in plain Go.
func encodeFiniteQ8_1Generic(dst []byte, src []float32, _ []float32) bool {
	for i := 0; i < len(src)/qk8; i++ {
		x := src[i*qk8 : (i+1)*qk8]
		b := dst[i*q8_1Bytes : (i+1)*q8_1Bytes]
		bits := absMaxBits(x)
		if bits >= 0x7F800000 {
			return false
		}
		amax := math.Float32frombits(bits)
		d, id := q8Scale(amax)
		putHalf(b, d)
		qs := b[4 : 4+qk8]
		q8Quantize(qs, x, amax, id)
		var sum int32
		for _, q := range qs {
			sum += int32(int8(q))
		}
		putHalf(b[2:], float32(float32(sum)*d))
	}
	return true
}
