package quantize

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestIQ4NLChunkPath: ggml_quantize_chunk's quantize_iq4_nl searches seven
// scales either side of -max/-127 (ntry = 7); quantize_row_iq4_nl_ref
// (ntry = -1) stops after the first fit and gives other bytes. The expected
// bytes are quantize_iq4_nl's for x[i] = (i·37 mod 17 − 8)/4 + i/64; the
// ref path gives f5a42fedca9754311edcb87543210dca9764 for the first block.
func TestIQ4NLChunkPath(t *testing.T) {
	src := make([]float32, 64)
	for i := range src {
		src[i] = float32((i*37)%17-8)/4 + float32(i)/64
	}
	iq34CheckEncoding(t, gguf.IQ4_NL, src, 64, nil,
		"1625e1234679acdef234579bcdeff34679acada554321dcba87543210cb9865432100ba8")
}

// TestIQ4Index compares the bound search with best_index_int8's binary
// search (bestIndexInt8) around every bound, at the table values, at
// special values and at random bit patterns. (All 2^32 float32 patterns
// were also compared once, offline.)
func TestIQ4Index(t *testing.T) {
	check := func(x float32) {
		if got, want := iq4Index(x), bestIndexInt8(kvaluesIQ4NL[:], x); got != want {
			t.Fatalf("x = %v (%#08x): index %d, best_index_int8 %d", x, math.Float32bits(x), got, want)
		}
	}
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32} {
		check(x)
	}
	for _, v := range kvaluesIQ4NL {
		check(float32(v))
	}
	for _, b := range iq4Bounds[1:] {
		lo, hi := b, b
		for range 256 {
			check(lo)
			check(hi)
			lo = math.Nextafter32(lo, float32(math.Inf(-1)))
			hi = math.Nextafter32(hi, float32(math.Inf(1)))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 18 {
		check(math.Float32frombits(r.Uint32()))
		check(float32(r.Float64()*300 - 150))
	}
}

// TestIQ4HugeInput: see TestIQ3HugeInput. For IQ4_XS the fp16 scale is
// -Inf, and the sub-blocks whose 6-bit scale is 0 decode to NaN (-Inf·0).
func TestIQ4HugeInput(t *testing.T) {
	tests := []struct {
		typ        gguf.Type
		enc, decSH string
	}{
		{gguf.IQ4_NL, "007c88888888888f888888888888888888881ca42d95c413c5f7bd709e1839ba3b6f95142124835739284e9c4fbe8cb818181775d9a3b324ed46d5b9597906e44be7a57179365c598f22e625c5f417dd214d136e670994ee3c68ef2595c0d53a4a796a6829207dda68986cd6a022f241d10d4a5568e310e8c6a3b8c3a94675a5394b4ce669cc4363aba6b0d958aeece6",
			"c0690ab09afdbf6024f25be3deff4fc87b53646c1a9b881afc7123c4180c1df2"},
		{gguf.IQ4_XS, "00fca8aa0000000088888888888f8888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888",
			"92f0e863528b98a0687bafbe6b1213e51e1de2459c10a60788a88c981df64e29"},
	}
	for _, tc := range tests {
		t.Run(tc.typ.String(), func(t *testing.T) {
			iq34CheckHuge(t, tc.typ, tc.enc, tc.decSH)
		})
	}
}

func TestIQ4EdgeRows(t *testing.T) {
	iq34RoundTrip(t, []gguf.Type{gguf.IQ4_NL, gguf.IQ4_XS}, 0.2)
}

func BenchmarkIQ4(b *testing.B) {
	iq34Bench(b, []gguf.Type{gguf.IQ4_NL, gguf.IQ4_XS})
}
