package quantize

import "math"

// Half- and brain-float conversions exactly as ggml performs them
// (ggml/src/ggml-impl.h: ggml_compute_fp32_to_fp16, ggml_compute_fp16_to_fp32,
// ggml_compute_fp32_to_bf16, ggml_compute_bf16_to_fp32). Every block scale of
// every quantized type goes through these, so they must match bit for bit.

// FP32ToFP16 rounds f to IEEE half precision exactly as ggml does (round to
// nearest even, overflow to infinity, NaN to a quiet NaN 0x7E00 with f's
// sign). ggml computes it with float arithmetic (ggml_compute_fp32_to_fp16);
// this integer form gives the same bits for every input (half_test.go
// compares the two over the whole float32 range) and is several times
// faster, which matters when a converter writes gigabytes of F16.
func FP32ToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	b &= 0x7FFFFFFF
	switch {
	case b > 0x7F800000: // NaN
		return sign | 0x7E00
	case b >= 0x477FF000: // ≥ 65520 rounds to infinity
		return sign | 0x7C00
	case b >= 0x38800000:
		return sign | halfNormal(b)
	case b <= 0x33000000: // ≤ 2^-25 rounds to zero (2^-25 ties to even)
		return sign
	}
	// Subnormal half: the value in units of 2^-24, rounded to nearest even.
	e := b >> 23
	m := b&0x7FFFFF | 0x800000
	shift := 126 - e
	q := m >> shift
	rem := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || rem == half && q&1 == 1 {
		q++
	}
	return sign | uint16(q)
}

// halfNormal is FP32ToFP16 of a magnitude b (float32 bits without the sign)
// in [2^-14, 65520), whose half is normal: rebias the exponent, round the
// 13 dropped bits to nearest even.
func halfNormal(b uint32) uint16 {
	r := b - 0x38000000
	r += 0x0FFF + (r>>13)&1
	return uint16(r >> 13)
}

// fp16Table holds the float32 value of every half-precision bit pattern.
var fp16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = fp16ToFP32Compute(uint16(h))
	}
	return &t
}()

// FP16ToFP32 widens a half-precision value; exact for every finite value.
func FP16ToFP32(h uint16) float32 { return fp16Table[h] }

// fp16ToFP32Compute mirrors ggml_compute_fp16_to_fp32, including that a NaN
// comes out quiet (the multiply in ggml's normalized path quiets a
// signalling NaN).
func fp16ToFP32Compute(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1F
	mant := uint32(h & 0x3FF)
	switch {
	case exp == 0x1F && mant != 0:
		return math.Float32frombits(sign | 0x7F800000 | 0x00400000 | mant<<13)
	case exp == 0x1F:
		return math.Float32frombits(sign | 0x7F800000)
	case exp == 0:
		// subnormal or zero: mant · 2^-24, exact in float32
		v := float32(mant) * 0x1.0p-24
		return math.Float32frombits(sign | math.Float32bits(v))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// FP32ToBF16 rounds f to bfloat16 (round to nearest even, NaN made quiet by
// setting bit 6 of the result, no flush of subnormals).
func FP32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return bf16Round(u)
}

// bf16Round is FP32ToBF16 of the bits u of a float32 that is not NaN: round
// the 16 dropped bits to nearest even (an infinity stays one, a finite value
// past the largest bfloat16 becomes one).
func bf16Round(u uint32) uint16 { return uint16((u + (0x7fff + ((u >> 16) & 1))) >> 16) }

// BF16ToFP32 widens a bfloat16 value (exact).
func BF16ToFP32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ 0x80000000) }
