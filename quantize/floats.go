package quantize

import (
	"encoding/binary"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// Plain (non-block) types: F32, F16, BF16, F64 and the integer types.
//
// ggml_quantize_chunk (ggml/src/ggml.c) handles only F32 (memcpy), F16
// (ggml_fp32_to_fp16_row: the scalar GGML_FP32_TO_FP16 on every element) and
// BF16 (ggml_fp32_to_bf16_row_ref: GGML_FP32_TO_BF16, round to nearest even,
// no flush of subnormals). None of them looks at importance weights.
//
// ggml has no quantize path at all for F64, I8, I16, I32 and I64:
// llama-quantize copies such tensors raw. Their decoders here are value
// conversions to float32 (so verify and requantize can read them) and their
// encoders exist for symmetry: F64 widens exactly; the integer encoders
// truncate toward zero like a C or numpy cast and saturate at the type's
// range, where C would be undefined. Integers of magnitude up to 2^24
// survive a float32 round trip exactly.

func init() {
	register(gguf.F32, &codec{encodeRow: encodeRowF32, encodeFinite: encodeFiniteF32, decodeRow: decodeRowF32})
	register(gguf.F16, &codec{encodeRow: encodeRowF16, encodeFinite: encodeFiniteF16, decodeRow: decodeRowF16})
	register(gguf.BF16, &codec{encodeRow: encodeRowBF16, encodeFinite: encodeFiniteBF16, decodeRow: decodeRowBF16})
	register(gguf.F64, &codec{encodeRow: encodeRowF64, decodeRow: decodeRowF64})
	register(gguf.I8, &codec{encodeRow: encodeRowI8, decodeRow: decodeRowI8})
	register(gguf.I16, &codec{encodeRow: encodeRowI16, decodeRow: decodeRowI16})
	register(gguf.I32, &codec{encodeRow: encodeRowI32, decodeRow: decodeRowI32})
	register(gguf.I64, &codec{encodeRow: encodeRowI64, decodeRow: decodeRowI64})
}

// encodeRowF32 is ggml_quantize_chunk's memcpy: the bits are kept as they are.
func encodeRowF32(dst []byte, src []float32, _ []float32) {
	dst = dst[:4*len(src)]
	for i, x := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
	}
}

// floatGroup is the number of values the fused encoders of F32, F16 and
// BF16 (codec.encodeFinite) check and then convert at a time: a group is
// finite when the largest of its magnitudes, compared as integer bits,
// is below the bits of +Inf (0x7F800000); NaNs lie above them.
const floatGroup = 16

// groupMagnitudes returns the smallest and largest magnitude of g as
// float32 bits without the sign.
func groupMagnitudes(g *[floatGroup]float32) (lo, hi uint32) {
	lo = math.MaxUint32
	for _, x := range g {
		b := math.Float32bits(x) &^ (1 << 31)
		lo, hi = min(lo, b), max(hi, b)
	}
	return lo, hi
}

// encodeFiniteF32Generic is encodeRowF32 fused with the finiteness check,
// in plain Go (encodeFiniteF32 runs on vectors with AVX2): it returns false,
// having stopped, at the first group holding a NaN or an infinity.
func encodeFiniteF32Generic(dst []byte, src []float32, _ []float32) bool {
	dst = dst[:4*len(src)]
	i := 0
	for ; i+floatGroup <= len(src); i += floatGroup {
		g := (*[floatGroup]float32)(src[i:])
		if _, hi := groupMagnitudes(g); hi >= 0x7F800000 {
			return false
		}
		o := (*[4 * floatGroup]byte)(dst[4*i:])
		for j, x := range g {
			binary.LittleEndian.PutUint32(o[4*j:], math.Float32bits(x))
		}
	}
	for ; i < len(src); i++ {
		b := math.Float32bits(src[i])
		if b&^(1<<31) >= 0x7F800000 {
			return false
		}
		binary.LittleEndian.PutUint32(dst[4*i:], b)
	}
	return true
}

// encodeFiniteF16Generic is encodeRowF16 fused with the finiteness check,
// in plain Go (encodeFiniteF16 runs VCVTPS2PH where the CPU has it). A group
// whose magnitudes all lie in [2^-14, 65520) (0x38800000 to 0x477FF000 as
// bits), the usual case, holds only values with a normal half, and
// FP32ToFP16 of each is its sign and halfNormal, so the group is converted
// without FP32ToFP16's range branches; any other group goes value by value
// through FP32ToFP16.
func encodeFiniteF16Generic(dst []byte, src []float32, _ []float32) bool {
	dst = dst[:2*len(src)]
	i := 0
	for ; i+floatGroup <= len(src); i += floatGroup {
		g := (*[floatGroup]float32)(src[i:])
		lo, hi := groupMagnitudes(g)
		if hi >= 0x7F800000 {
			return false
		}
		o := (*[2 * floatGroup]byte)(dst[2*i:])
		if lo >= 0x38800000 && hi < 0x477FF000 {
			for j, x := range g {
				b := math.Float32bits(x)
				binary.LittleEndian.PutUint16(o[2*j:], uint16(b>>16)&0x8000|halfNormal(b&^(1<<31)))
			}
			continue
		}
		for j, x := range g {
			binary.LittleEndian.PutUint16(o[2*j:], FP32ToFP16(x))
		}
	}
	for ; i < len(src); i++ {
		if math.Float32bits(src[i])&^(1<<31) >= 0x7F800000 {
			return false
		}
		binary.LittleEndian.PutUint16(dst[2*i:], FP32ToFP16(src[i]))
	}
	return true
}

// encodeFiniteBF16Generic is encodeRowBF16 fused with the finiteness check,
// in plain Go (encodeFiniteBF16 runs on vectors with AVX2); once a group is
// known to hold no NaN, FP32ToBF16 of each value is bf16Round.
func encodeFiniteBF16Generic(dst []byte, src []float32, _ []float32) bool {
	dst = dst[:2*len(src)]
	i := 0
	for ; i+floatGroup <= len(src); i += floatGroup {
		g := (*[floatGroup]float32)(src[i:])
		if _, hi := groupMagnitudes(g); hi >= 0x7F800000 {
			return false
		}
		o := (*[2 * floatGroup]byte)(dst[2*i:])
		for j, x := range g {
			binary.LittleEndian.PutUint16(o[2*j:], bf16Round(math.Float32bits(x)))
		}
	}
	for ; i < len(src); i++ {
		if math.Float32bits(src[i])&^(1<<31) >= 0x7F800000 {
			return false
		}
		binary.LittleEndian.PutUint16(dst[2*i:], FP32ToBF16(src[i]))
	}
	return true
}

// decodeRowF32 is the identity (F32 has no to_float in ggml's type traits).
func decodeRowF32(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func encodeRowF16(dst []byte, src []float32, _ []float32) {
	dst = dst[:2*len(src)]
	for i, x := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], FP32ToFP16(x))
	}
}

func decodeRowF16Generic(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = FP16ToFP32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func encodeRowBF16(dst []byte, src []float32, _ []float32) {
	dst = dst[:2*len(src)]
	for i, x := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], FP32ToBF16(x))
	}
}

func decodeRowBF16Generic(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = BF16ToFP32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func encodeRowF64(dst []byte, src []float32, _ []float32) {
	dst = dst[:8*len(src)]
	for i, x := range src {
		binary.LittleEndian.PutUint64(dst[8*i:], math.Float64bits(float64(x)))
	}
}

// decodeRowF64 rounds to nearest even, as a C (float) cast of a double does;
// values beyond float32's range become ±Inf.
func decodeRowF64(dst []float32, src []byte) {
	src = src[:8*len(dst)]
	for i := range dst {
		dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
	}
}

// truncSaturate truncates x toward zero and clamps it to [lo, hi].
func truncSaturate(x float32, lo, hi float64) float64 {
	f := math.Trunc(float64(x))
	return max(lo, min(hi, f))
}

func encodeRowI8(dst []byte, src []float32, _ []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = byte(int8(truncSaturate(x, math.MinInt8, math.MaxInt8)))
	}
}

func decodeRowI8(dst []float32, src []byte) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = float32(int8(src[i]))
	}
}

func encodeRowI16(dst []byte, src []float32, _ []float32) {
	dst = dst[:2*len(src)]
	for i, x := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(int16(truncSaturate(x, math.MinInt16, math.MaxInt16))))
	}
}

func decodeRowI16(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = float32(int16(binary.LittleEndian.Uint16(src[2*i:])))
	}
}

func encodeRowI32(dst []byte, src []float32, _ []float32) {
	dst = dst[:4*len(src)]
	for i, x := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], uint32(int32(truncSaturate(x, math.MinInt32, math.MaxInt32))))
	}
}

// decodeRowI32 rounds to nearest even where |v| > 2^24, as C's (float) does.
func decodeRowI32(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = float32(int32(binary.LittleEndian.Uint32(src[4*i:])))
	}
}

func encodeRowI64(dst []byte, src []float32, _ []float32) {
	dst = dst[:8*len(src)]
	for i, x := range src {
		// 2^63 itself is out of range; the float32 below it truncates fine.
		var v int64
		switch f := math.Trunc(float64(x)); {
		case f >= 1<<63:
			v = math.MaxInt64
		case f <= -(1 << 63):
			v = math.MinInt64
		default:
			v = int64(f)
		}
		binary.LittleEndian.PutUint64(dst[8*i:], uint64(v))
	}
}

// decodeRowI64 rounds to nearest even where |v| > 2^24, as C's (float) does.
func decodeRowI64(dst []float32, src []byte) {
	src = src[:8*len(dst)]
	for i := range dst {
		dst[i] = float32(int64(binary.LittleEndian.Uint64(src[8*i:])))
	}
}

// halvesFiniteGeneric is halvesFinite in plain Go.
func halvesFiniteGeneric(data []byte, exp uint16) bool {
	for i := 0; i+1 < len(data); i += 2 {
		if binary.LittleEndian.Uint16(data[i:])&exp == exp {
			return false
		}
	}
	return true
}
