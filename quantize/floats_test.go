package quantize

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

func TestCConversions(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, tt := range []struct {
		x      float32
		round  float32
		trunc  int32
		lround int64
	}{
		{0.5, 1, 0, 1},
		{-0.5, -1, 0, -1},
		{1.5, 2, 1, 2},
		{2.5, 3, 2, 3},
		{-2.5, -3, -2, -3},
		{0.49999997, 0, 0, 0},
		{-2.9, -3, -2, -3},
		{8388609, 8388609, 8388609, 8388609},
		{2147483520, 2147483520, 2147483520, 2147483520}, // largest float32 below 2^31
		{-2147483648, -2147483648, math.MinInt32, -2147483648},
		{2147483648, 2147483648, math.MinInt32, 2147483648}, // 2^31: out of int32
		{-2147483904, -2147483904, math.MinInt32, -2147483904},
		{9.223372e18, 9.223372e18, math.MinInt32, math.MinInt64}, // 2^63: out of int64
		{-9.223372e18, -9.223372e18, math.MinInt32, math.MinInt64},
		{inf, inf, math.MinInt32, math.MinInt64},
		{-inf, -inf, math.MinInt32, math.MinInt64},
	} {
		if got := cRoundf(tt.x); got != tt.round {
			t.Errorf("cRoundf(%v) = %v, want %v", tt.x, got, tt.round)
		}
		if got := cTruncInt32(tt.x); got != tt.trunc {
			t.Errorf("cTruncInt32(%v) = %v, want %v", tt.x, got, tt.trunc)
		}
		if got := cLroundf(tt.x); got != tt.lround {
			t.Errorf("cLroundf(%v) = %v, want %v", tt.x, got, tt.lround)
		}
	}
	if cTruncInt32(nan) != math.MinInt32 || cLroundf(nan) != math.MinInt64 || cRoundf(nan) == cRoundf(nan) {
		t.Error("NaN must convert to the integer indefinite value and round to NaN")
	}
	if math.Signbit(float64(cRoundf(float32(math.Copysign(0.3, -1))))) != true {
		t.Error("cRoundf(-0.3) must be -0, as roundf")
	}
}

// TestRoundHalfAway compares the branch-free fast rounding with C's roundf
// (math.Round) where it can go wrong: at every half-integer below 2^22, the
// two floats beside it, the integers and their neighbours, both signs, plus
// every float in [0.25, 2] and a sparse sweep of the rest.
func TestRoundHalfAway(t *testing.T) {
	check := func(s float32) {
		for _, v := range []float32{s, -s} {
			if got, want := roundHalfAway(v), int32(math.Round(float64(v))); got != want {
				t.Fatalf("roundHalfAway(%v) = %d, roundf gives %d", v, got, want)
			}
		}
	}
	next := func(x float32, dir float64) float32 { return float32(math.Nextafter32(x, float32(dir))) }
	for n := range 1 << 22 {
		for _, s := range []float32{float32(n), float32(n) + 0.5} {
			check(s)
			check(next(s, 0))
			check(next(s, math.Inf(1)))
		}
	}
	for b := math.Float32bits(0.25); b <= math.Float32bits(2); b++ {
		check(math.Float32frombits(b))
	}
	for b := math.Float32bits(2); b < math.Float32bits(0x1p22); b += 997 {
		check(math.Float32frombits(b))
	}
}

// TestFloatCodecs checks the plain types value by value, in both directions.
func TestFloatCodecs(t *testing.T) {
	in := []float32{0, float32(math.Copysign(0, -1)), 1, -1.9, 1.9, 0.5, 127.9, 128, -129, 300, -300,
		40000, -40000, 65504, 65520, 3e9, -3e9, 16777217, 2147483520, 9.223372e18, -9.223372e18,
		math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-30}
	tests := []struct {
		typ  gguf.Type
		want func(x float32) float32 // decode(encode(x))
	}{
		{gguf.F32, func(x float32) float32 { return x }},
		{gguf.F64, func(x float32) float32 { return x }},
		{gguf.F16, func(x float32) float32 { return FP16ToFP32(FP32ToFP16(x)) }},
		{gguf.BF16, func(x float32) float32 { return BF16ToFP32(FP32ToBF16(x)) }},
		{gguf.I8, func(x float32) float32 { return intRange(x, math.MinInt8, math.MaxInt8) }},
		{gguf.I16, func(x float32) float32 { return intRange(x, math.MinInt16, math.MaxInt16) }},
		{gguf.I32, func(x float32) float32 { return intRange(x, math.MinInt32, math.MaxInt32) }},
		{gguf.I64, func(x float32) float32 { return intRange(x, math.MinInt64, math.MaxInt64) }},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String(), func(t *testing.T) {
			enc := make([]byte, len(in)*tt.typ.TypeSize())
			if err := Encode(tt.typ, enc, in, 1, nil); err != nil {
				t.Fatal(err)
			}
			if err := Validate(tt.typ, enc); err != nil && tt.typ != gguf.F16 && tt.typ != gguf.BF16 { // 3e9 overflows these
				t.Errorf("Validate: %v", err)
			}
			out := make([]float32, len(in))
			if err := Decode(tt.typ, out, enc, len(in)); err != nil {
				t.Fatal(err)
			}
			for i, x := range in {
				if w := tt.want(x); math.Float32bits(out[i]) != math.Float32bits(w) {
					t.Errorf("%v → %v, want %v", x, out[i], w)
				}
			}
		})
	}
}

// intRange is x truncated and clamped to [lo, hi], as a float32 (+0 for -0).
func intRange(x float32, lo, hi float64) float32 {
	return float32(max(lo, min(hi, math.Trunc(float64(x))))) + 0
}

// TestIntegerCodecsRaw pins the stored integers and the float32 rounding of
// the wide integer decoders.
func TestIntegerCodecsRaw(t *testing.T) {
	enc := make([]byte, 8*4)
	if err := Encode(gguf.I64, enc, []float32{1e19, -1e19, -7.9, 16777216}, 4, nil); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{math.MaxInt64, math.MinInt64, -7, 16777216} {
		if got := int64(binary.LittleEndian.Uint64(enc[8*i:])); got != want {
			t.Errorf("I64 value %d stored as %d, want %d", i, got, want)
		}
	}
	i32 := make([]byte, 8)
	binary.LittleEndian.PutUint32(i32, 16777217)         // rounds to even: 16777216
	binary.LittleEndian.PutUint32(i32[4:], 0x80000000+3) // -2147483645 → -2147483648
	out := make([]float32, 2)
	if err := Decode(gguf.I32, out, i32, 2); err != nil {
		t.Fatal(err)
	}
	if out[0] != 16777216 || out[1] != -2147483648 {
		t.Errorf("I32 decode = %v", out)
	}
	f64 := make([]byte, 16)
	binary.LittleEndian.PutUint64(f64, math.Float64bits(1e300))
	binary.LittleEndian.PutUint64(f64[8:], math.Float64bits(1+0x1p-24)) // tie: rounds to even, 1
	if err := Decode(gguf.F64, out, f64, 2); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(float64(out[0]), 1) || out[1] != 1 {
		t.Errorf("F64 decode = %v", out)
	}
}

// TestF32KeepsBits: decoding F32 keeps NaN payloads, as memcpy does.
func TestF32KeepsBits(t *testing.T) {
	raw := []uint32{0x7FA00001, 0xFFC00000, 0x80000000, 0x00000001}
	b := make([]byte, 4*len(raw))
	for i, r := range raw {
		binary.LittleEndian.PutUint32(b[4*i:], r)
	}
	out := make([]float32, len(raw))
	if err := Decode(gguf.F32, out, b, len(raw)); err != nil {
		t.Fatal(err)
	}
	for i, r := range raw {
		if math.Float32bits(out[i]) != r {
			t.Errorf("value %d: %#08x, want %#08x", i, math.Float32bits(out[i]), r)
		}
	}
}

// TestAbsMaxSigned: the value of largest magnitude, the first on ties, and
// +0 when every value is a zero of either sign (ggml's max starts at 0.0f).
func TestAbsMaxSigned(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	for _, tt := range []struct {
		name string
		x    []float32
		want float32
	}{
		{"negative zeros", []float32{negZero, negZero}, 0},
		{"mixed zeros", []float32{negZero, 0, negZero}, 0},
		{"first of a tie", []float32{1, -2, 2, -1}, -2},
		{"positive first", []float32{0.5, 3, -3}, 3},
		{"subnormal", []float32{negZero, -1e-45, 1e-45}, -1e-45},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := absMaxSigned(tt.x)
			if math.Float32bits(got) != math.Float32bits(tt.want) {
				t.Fatalf("absMaxSigned(%v) = %v (%#x), want %v (%#x)", tt.x, got, math.Float32bits(got), tt.want, math.Float32bits(tt.want))
			}
		})
	}
}
