package quantize

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestBlockEdgeRows pins ggml's bytes (from ggml_quantize_chunk of the
// reference build) for rows that take the undefined-behaviour and
// saturation paths of Q8_0, Q2_0, TQ1_0, TQ2_0, MXFP4, NVFP4 and Q1_0.
// Each row is n copies of v with x[0] = v0.
func TestBlockEdgeRows(t *testing.T) {
	rep := func(s string, n int) string { return strings.Repeat(s, n) }
	tests := []struct {
		name  string
		typ   gguf.Type
		n     int
		v, v0 float32
		want  string
	}{
		// amax/127 is subnormal, 1/d = +Inf: x·id is ±Inf (or NaN for 0)
		// and cvttss2si gives INT_MIN, whose low byte is 0.
		{"Q8_0 subnormal scale", gguf.Q8_0, 32, 1e-40, -1e-40, rep("00", 34)},
		// lroundf(±Inf or NaN) = LONG_MIN; +1 keeps the low byte 1, so every
		// trit is "0" (1), packed as 121 → 128 and (40·3) → 127.
		{"TQ1_0 subnormal scale", gguf.TQ1_0, 256, 1e-40, 1e-40, rep("80", 48) + rep("7f", 4) + "0000"},
		{"TQ1_0 zeros and one subnormal", gguf.TQ1_0, 256, 0, -1e-40, rep("80", 48) + rep("7f", 4) + "0000"},
		{"TQ2_0 subnormal scale", gguf.TQ2_0, 256, 1e-40, 0, rep("55", 64) + "0000"},
		// (int)roundf(±Inf or NaN) + 1 = INT_MIN+1, clamped to code 0.
		{"Q2_0 subnormal scale", gguf.Q2_0, 64, 1e-40, 0, rep("00", 18)},
		// floorf(log2f(1e-39)) - 2 + 127 = -5, cast to uint8_t: 251.
		{"MXFP4 tiny amax wraps e", gguf.MXFP4, 32, 1e-39, -1e-39, "fb" + rep("00", 16)},
		// amax/6 > 448 saturates the UE4M3 scale to 0x7E (448·0.5).
		{"NVFP4 saturated scales", gguf.NVFP4, 64, 1e4, 3000, rep("7e", 4) + rep("77", 32)},
		// amax/6 below the smallest UE4M3 subnormal flushes to 0.
		{"NVFP4 flushed scales", gguf.NVFP4, 64, 1e-6, 1e-5, rep("00", 36)},
		// The legacy types' truncating casts on the same subnormal scale
		// (1/d = +Inf) and on ±FLT_MAX (Q4_1/Q5_1: d = +Inf, id = 0, NaN
		// products; Q4_0/Q5_0: finite id, the plain-truncation path). The
		// bytes are ggml_quantize_chunk's (0c1e570, the portable build).
		{"Q4_0 subnormal scale", gguf.Q4_0, 32, 1e-40, -1e-40, rep("00", 18)},
		{"Q5_0 subnormal scale", gguf.Q5_0, 32, 1e-40, -1e-40, rep("00", 22)},
		{"Q4_1 subnormal scale", gguf.Q4_1, 32, 1e-40, -1e-40, "00000080" + rep("00", 16)},
		{"Q5_1 subnormal scale", gguf.Q5_1, 32, 1e-40, -1e-40, "00000080" + rep("00", 20)},
		{"Q4_1 infinite scale", gguf.Q4_1, 32, math.MaxFloat32, -math.MaxFloat32, "007c00fc" + rep("00", 16)},
		{"Q5_1 infinite scale", gguf.Q5_1, 32, math.MaxFloat32, -math.MaxFloat32, "007c00fc" + rep("00", 20)},
		{"Q4_0 FLT_MAX", gguf.Q4_0, 32, math.MaxFloat32, -math.MaxFloat32, "007cf0" + rep("ff", 15)},
		{"Q5_0 FLT_MAX", gguf.Q5_0, 32, math.MaxFloat32, -math.MaxFloat32, "007cfefffffff0" + rep("ff", 15)},
		// -0 >= 0 sets the bit; d = 1/128.
		{"Q1_0 negative zero", gguf.Q1_0, 128, float32(math.Copysign(0, -1)), -1, "0020fe" + rep("ff", 15)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := make([]float32, tt.n)
			for i := range src {
				src[i] = tt.v
			}
			src[0] = tt.v0
			n, err := RowSize(tt.typ, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, n)
			if err := Encode(tt.typ, got, src, tt.n, nil); err != nil {
				t.Fatal(err)
			}
			if h := hex.EncodeToString(got); h != tt.want {
				t.Fatalf("got  %s\nwant %s", h, tt.want)
			}
		})
	}
}

// TestUE4M3 checks the UE4M3 helpers against the format: every code
// 1..0x7E decodes to half its value, and encoding twice that value gives the
// code back; values round on the first dropped bit and saturate at 448.
func TestUE4M3(t *testing.T) {
	for c := 1; c < 0x7F; c++ {
		v := 2 * ue4m3ToFP32(uint8(c))
		exp, man := c>>3, c&7
		val := math.Ldexp(float64(man), -9)
		if exp > 0 {
			val = math.Ldexp(1+float64(man)/8, exp-7)
		}
		if float64(v) != val {
			t.Errorf("code %#02x = %v, want %v", c, v, val)
		}
		// ggml saturates every value with exponent field 15 to 0x7E (448).
		want := uint8(c)
		if exp == 15 {
			want = 0x7E
		}
		if back := fp32ToUE4M3(v); back != want {
			t.Errorf("fp32ToUE4M3(%v) = %#02x, want %#02x", v, back, want)
		}
	}
	if ue4m3ToFP32(0) != 0 || ue4m3ToFP32(0x7F) != 0 || ue4m3ToFP32(0x80) != 0 || ue4m3ToFP32(0xFF) != 240 {
		t.Error("0, 0x7F and 0x80 must read as 0, 0xFF as 240 (bit 7 ignored)")
	}
	for _, tt := range []struct {
		x    float32
		want uint8
	}{
		{0, 0}, {-1, 0}, {float32(math.NaN()), 0}, {1000, 0x7E}, {448, 0x7E}, {464, 0x7E},
		{1.0625 - 0x1p-20, 0x38}, {1.0625, 0x39}, {1.125, 0x39}, // round on bit 19 (half up)
		{247, 0x77}, {248, 0x7E}, {256, 0x7E}, {300, 0x7E}, // exponent field 15 saturates
		{0x1p-11, 0}, {0x1p-10, 1}, {7.5 * 0x1p-9, 7}, // subnormals: (int)(x·512 + 0.5)
	} {
		if got := fp32ToUE4M3(tt.x); got != tt.want {
			t.Errorf("fp32ToUE4M3(%v) = %#02x, want %#02x", tt.x, got, tt.want)
		}
	}
}

func TestE8M0Half(t *testing.T) {
	for e := 0; e < 256; e++ {
		want := math.Ldexp(1, e-128)
		if got := e8m0ToFP32Half(uint8(e)); float64(got) != want && e != 255 {
			t.Errorf("e8m0ToFP32Half(%d) = %v, want %v", e, got, want)
		}
	}
	// exponents at powers of two, where floorf(log2f) must be exact
	for k := -125; k < 128; k++ {
		x := float32(math.Ldexp(1, k))
		below := math.Nextafter32(x, 0)
		if got := mxfp4Exponent(x); got != uint8(k-2+127) {
			t.Errorf("mxfp4Exponent(2^%d) = %d", k, got)
		}
		// log2f of the float just below 2^k rounds up to k when the gap is
		// under half an ulp of k, as glibc's log2f does.
		wantBelow := k - 1
		if l := float32(math.Log2(float64(below))); l == float32(k) {
			wantBelow = k
		}
		if got := mxfp4Exponent(below); got != uint8(wantBelow-2+127) {
			t.Errorf("mxfp4Exponent(below 2^%d) = %d", k, got)
		}
	}
}

// TestBlockRoundTrip checks the decoders against the encoders on random
// rows of many scales: decoded values stay within each format's step of
// the input, zero rows decode to zero, and the result validates.
func TestBlockRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const ncols = 512
	src := make([]float32, 64*ncols)
	// Scales that keep every block scale in the normal range of fp16 and
	// UE4M3: below it the formats lose precision by design (ggml has no
	// per-tensor scale), above it they overflow (see TestBlockEdgeRows).
	scales := []float64{0.3, 1, 3, 10, 30, 100}
	for row := range 64 {
		scale := scales[row%len(scales)]
		for j := range ncols {
			src[row*ncols+j] = float32(r.NormFloat64() * scale)
		}
	}
	tests := []struct {
		typ gguf.Type
		// maxErr is the largest |decoded - x| allowed relative to the
		// block's absolute maximum (Q1_0: to its mean |x|).
		maxErr float64
		block  int
	}{
		{gguf.Q8_0, 0.5/127 + 1e-3, 32},
		{gguf.TQ1_0, 0.5 + 1e-3, 256},
		{gguf.TQ2_0, 0.5 + 1e-3, 256},
		{gguf.Q2_0, 0.5 + 1e-3, 64},
		{gguf.MXFP4, 1.0 / 3, 32}, // E2M1 gaps, scale a power of two ≥ amax/8
		{gguf.NVFP4, 0.2, 16},     // scale ≈ amax/6 within UE4M3's 1/16 steps
	}
	for _, tt := range tests {
		t.Run(tt.typ.String(), func(t *testing.T) {
			n, _ := RowSize(tt.typ, ncols)
			enc := make([]byte, len(src)/ncols*n)
			if err := Encode(tt.typ, enc, src, ncols, nil); err != nil {
				t.Fatal(err)
			}
			if err := Validate(tt.typ, enc); err != nil {
				t.Fatal(err)
			}
			dec := make([]float32, len(src))
			if err := Decode(tt.typ, dec, enc, ncols); err != nil {
				t.Fatal(err)
			}
			for b := 0; b < len(src); b += tt.block {
				x := src[b : b+tt.block]
				var amax float64
				for _, v := range x {
					amax = max(amax, math.Abs(float64(v)))
				}
				for j, v := range x {
					if e := math.Abs(float64(dec[b+j]) - float64(v)); e > tt.maxErr*amax*1.002 {
						t.Fatalf("value %d: %v decodes to %v (block amax %v)", b+j, v, dec[b+j], amax)
					}
				}
			}
		})
	}
	t.Run("zeros", func(t *testing.T) {
		zero := make([]float32, 256)
		for _, typ := range []gguf.Type{gguf.Q8_0, gguf.TQ1_0, gguf.TQ2_0, gguf.Q2_0, gguf.MXFP4, gguf.NVFP4, gguf.Q1_0} {
			n, _ := RowSize(typ, len(zero))
			enc := make([]byte, n)
			dec := make([]float32, len(zero))
			if err := Encode(typ, enc, zero, len(zero), nil); err != nil {
				t.Fatal(err)
			}
			if err := Decode(typ, dec, enc, len(zero)); err != nil {
				t.Fatal(err)
			}
			for i, v := range dec {
				if v != 0 {
					t.Fatalf("%s: zero row decodes to %v at %d", typ, v, i)
				}
			}
		}
	})
}

// TestQ8_1Sum: s is fp16(d · Σqs) and qs equal Q8_0's.
func TestQ8_1Sum(t *testing.T) {
	x := make([]float32, 64)
	for i := range x {
		x[i] = float32(i%9) - 3.3
	}
	q81 := make([]byte, 2*36)
	q80 := make([]byte, 2*34)
	if err := Encode(gguf.Q8_1, q81, x, 64, nil); err != nil {
		t.Fatal(err)
	}
	if err := Encode(gguf.Q8_0, q80, x, 64, nil); err != nil {
		t.Fatal(err)
	}
	for b := range 2 {
		blk, ref := q81[36*b:36*(b+1)], q80[34*b:34*(b+1)]
		if !bytes.Equal(blk[:2], ref[:2]) || !bytes.Equal(blk[4:], ref[2:]) {
			t.Fatalf("block %d: Q8_1 d/qs differ from Q8_0's", b)
		}
		var sum int32
		for _, q := range blk[4:] {
			sum += int32(int8(q))
		}
		var amax float32
		for _, v := range x[32*b : 32*(b+1)] {
			amax = max(amax, abs32(v))
		}
		if got, want := halfAt(blk[2:]), FP16ToFP32(FP32ToFP16(float32(sum)*(amax/127))); got != want {
			t.Errorf("block %d: s = %v, want %v", b, got, want)
		}
	}
}

// TestFP4BestIndex: fp4Grid.bestIndex picks the code of ggml's
// best_index_mxfp4, written out literally here, for every scale the
// encoders can produce (all 256 E8M0 and all 256 UE4M3 bytes) plus a few
// they cannot, on grid values, midpoints and their float neighbours,
// random values, and huge values.
func TestFP4BestIndex(t *testing.T) {
	ref := func(x, e float32) uint8 {
		best := 0
		bestErr := abs32(float32(float32(kvaluesMXFP4[0])*e) - x)
		for i := 1; i < 16; i++ {
			if err := abs32(float32(float32(kvaluesMXFP4[i])*e) - x); err < bestErr {
				best, bestErr = i, err
			}
		}
		return uint8(best)
	}
	scales := []float32{0x1p-149, 0x1p-140, 1e-3, 0.1, 3.7, 1e30}
	for b := range 256 {
		scales = append(scales, e8m0ToFP32Half(uint8(b)), ue4m3ToFP32(uint8(b)))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range scales {
		g := newFP4Grid(d)
		var xs []float32
		for _, k := range append(fp4Mid[:], 0, 1, 2, 3, 4, 6, 8, 12, 16) {
			v := k * d
			for _, y := range []float32{v, math.Nextafter32(v, 0), math.Nextafter32(v, float32(math.Inf(1)))} {
				xs = append(xs, y, -y)
			}
		}
		for range 200 {
			xs = append(xs, float32(r.NormFloat64()*6)*d, float32(r.NormFloat64()*1e30))
		}
		xs = append(xs, math.MaxFloat32, -math.MaxFloat32, 0x1p-149, -0x1p-149, float32(math.Copysign(0, -1)))
		for _, x := range xs {
			if math.IsInf(float64(x), 0) || math.IsNaN(float64(x)) {
				continue // the encoders never see non-finite input
			}
			if got, want := g.bestIndex(x), ref(x, d); got != want {
				t.Fatalf("d=%v x=%v: code %d, ggml %d", d, x, got, want)
			}
		}
	}
}
