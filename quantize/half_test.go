package quantize

import (
	"math"
	"testing"

	"github.com/x448/float16"
)

// TestFP16ToFP32Exact checks every half-precision pattern widens to the exact
// IEEE value (NaNs: same sign, NaN, quiet).
func TestFP16ToFP32Exact(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		got := FP16ToFP32(uint16(h))
		want := float16.Frombits(uint16(h)).Float32()
		if math.IsNaN(float64(want)) {
			b := math.Float32bits(got)
			if !math.IsNaN(float64(got)) || b&0x00400000 == 0 || b>>31 != uint32(h>>15) {
				t.Fatalf("%#04x: got %#08x, want a quiet NaN", h, b)
			}
			continue
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("%#04x: got %v, want %v", h, got, want)
		}
	}
}

// TestFP32ToFP16RoundTrip checks rounding against an independent
// round-to-nearest-even implementation on every half value, every midpoint
// between neighbours, and the overflow/NaN edges.
func TestFP32ToFP16RoundTrip(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := FP16ToFP32(uint16(h))
		got := FP32ToFP16(f)
		if math.IsNaN(float64(f)) {
			if got&0x7FFF != 0x7E00 || got>>15 != uint16(h>>15) {
				t.Fatalf("NaN %#04x -> %#04x, want sign|0x7E00", h, got)
			}
			continue
		}
		if got != uint16(h) {
			t.Fatalf("%#04x (%v) -> %#04x", h, f, got)
		}
	}
	cases := []struct {
		in   float32
		want uint16
	}{
		{65504, 0x7BFF},
		{65519.99, 0x7BFF},
		{65520, 0x7C00}, // halfway to the next binade rounds to even: infinity
		{float32(math.Inf(-1)), 0xFC00},
		{1 + 0x1.0p-11, 0x3C00},                 // tie, rounds to even
		{1 + 3*0x1.0p-11, 0x3C02},               // tie, rounds to even (up)
		{0x1.0p-25, 0x0000},                     // half the smallest subnormal: tie to even 0
		{0x1.8p-25, 0x0001},                     // above the tie
		{float32(math.Copysign(0, -1)), 0x8000}, // sign kept
		{float32(math.Float32frombits(0x7f800001)), 0x7E00},
	}
	for _, c := range cases {
		if got := FP32ToFP16(c.in); got != c.want {
			t.Errorf("FP32ToFP16(%v) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

func TestBF16(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80},
		{0x3f808000, 0x3f80}, // tie to even
		{0x3f818000, 0x3f82}, // tie to even (up)
		{0x3f808001, 0x3f81},
		{0x7f800000, 0x7f80},
		{0x7f800001, 0x7fc0}, // signalling NaN made quiet
		{0xffc00001, 0xffc0},
		{0x00000001, 0x0000}, // subnormal not flushed, rounds to 0
		{0x00008000, 0x0000},
		{0x00018000, 0x0002},
	}
	for _, c := range cases {
		if got := FP32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("FP32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if BF16ToFP32(0xc0a0) != -5 {
		t.Error("BF16ToFP32(0xc0a0) != -5")
	}
}

// fp32ToFP16Float is ggml_compute_fp32_to_fp16 as ggml writes it, with
// float arithmetic; FP32ToFP16 must agree with it bit for bit.
func fp32ToFP16Float(f float32) uint16 {
	const scaleToInf = 0x1.0p+112
	const scaleToZero = 0x1.0p-110
	base := float32(float32(abs32(f)*scaleToInf) * scaleToZero)
	w := math.Float32bits(f)
	shl1w := w + w
	sign := w & 0x80000000
	bias := shl1w & 0xFF000000
	if bias < 0x71000000 {
		bias = 0x71000000
	}
	base = float32(math.Float32frombits((bias>>1)+0x07800000) + base)
	bits := math.Float32bits(base)
	expBits := (bits >> 13) & 0x00007C00
	mantBits := bits & 0x00000FFF
	nonsign := expBits + mantBits
	if shl1w > 0xFF000000 {
		nonsign = 0x7E00
	}
	return uint16(sign>>16) | uint16(nonsign)
}

// TestFP32ToFP16MatchesGGML compares the integer conversion with ggml's
// float formulation over every float32 bit pattern (a stride of 7 with
// -short), both signs, NaNs and infinities included.
func TestFP32ToFP16MatchesGGML(t *testing.T) {
	stride := uint64(1)
	if testing.Short() {
		stride = 7
	}
	for b := uint64(0); b < 1<<32; b += stride {
		f := math.Float32frombits(uint32(b))
		if got, want := FP32ToFP16(f), fp32ToFP16Float(f); got != want {
			t.Fatalf("%#08x (%g): got %#04x, ggml %#04x", b, f, got, want)
		}
	}
}
