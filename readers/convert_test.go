package readers

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/x448/float16"
)

func TestDTypeSize(t *testing.T) {
	for _, tc := range []struct {
		d    DType
		size int
	}{
		{F64, 8}, {F32, 4}, {F16, 2}, {BF16, 2}, {F8E4M3, 1}, {F8E5M2, 1}, {F8E8M0, 1},
		{I64, 8}, {I32, 4}, {I16, 2}, {I8, 1}, {U64, 8}, {U32, 4}, {U16, 2}, {U8, 1}, {Bool, 1},
		{Unknown, 0}, {"F4", 0}, {"f32", 0},
	} {
		t.Run(string(tc.d), func(t *testing.T) {
			if got := tc.d.Size(); got != tc.size {
				t.Errorf("Size() = %d, want %d", got, tc.size)
			}
			_, err := ParseDType(string(tc.d))
			if (err == nil) != (tc.size != 0) {
				t.Errorf("ParseDType(%q) error = %v", tc.d, err)
			}
		})
	}
}

// TestF16Exhaustive compares every half with x448/float16 (an independent
// implementation); NaNs must stay NaN with their sign and payload, quieted.
func TestF16Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		got := F16ToFloat32(h)
		want := float16.Frombits(h).Float32()
		if float16.Frombits(h).IsNaN() {
			gb := math.Float32bits(got)
			wb := math.Float32bits(want) | 1<<22
			if gb != wb {
				t.Fatalf("half %#04x: got bits %#08x, want %#08x", h, gb, wb)
			}
			continue
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("half %#04x: got %g (%#08x), want %g", h, got, math.Float32bits(got), want)
		}
	}
}

// TestF8 checks both float8 formats against values computed from their
// definitions (sign × 2^(e-bias) × (1 + m/2^mbits), subnormals 2^(1-bias) ×
// m/2^mbits) for all 256 bytes.
func TestF8(t *testing.T) {
	ref := func(b uint8, ebits, mbits, bias int) float64 {
		e := int(b>>mbits) & (1<<ebits - 1)
		m := float64(b & (1<<mbits - 1))
		v := math.Ldexp(1+m/float64(int(1)<<mbits), e-bias)
		if e == 0 {
			v = math.Ldexp(m/float64(int(1)<<mbits), 1-bias)
		}
		if b&0x80 != 0 {
			v = -v
		}
		return v
	}
	for i := range 256 {
		b := uint8(i)
		t.Run("", func(t *testing.T) {
			got := float64(F8E4M3ToFloat32(b))
			if b&0x7f == 0x7f {
				if !math.IsNaN(got) || math.Signbit(got) != (b&0x80 != 0) {
					t.Errorf("e4m3 %#02x = %g, want signed NaN", b, got)
				}
			} else if want := ref(b, 4, 3, 7); got != want || math.Signbit(got) != math.Signbit(want) {
				t.Errorf("e4m3 %#02x = %g, want %g", b, got, want)
			}
			got = float64(F8E5M2ToFloat32(b))
			switch {
			case b&0x7c == 0x7c && b&3 != 0:
				if !math.IsNaN(got) {
					t.Errorf("e5m2 %#02x = %g, want NaN", b, got)
				}
			case b&0x7f == 0x7c:
				if !math.IsInf(got, 1-2*int(b>>7)) {
					t.Errorf("e5m2 %#02x = %g, want ±Inf", b, got)
				}
			default:
				if want := ref(b, 5, 2, 15); got != want || math.Signbit(got) != math.Signbit(want) {
					t.Errorf("e5m2 %#02x = %g, want %g", b, got, want)
				}
			}
		})
	}
	// Spot values from the formats' published tables: e4m3fn max 448,
	// min subnormal 2^-9; e5m2 max 57344, min subnormal 2^-16.
	for _, tc := range []struct {
		name string
		got  float32
		want float32
	}{
		{"e4m3 max", F8E4M3ToFloat32(0x7e), 448},
		{"e4m3 min subnormal", F8E4M3ToFloat32(0x01), 0x1p-9},
		{"e4m3 one", F8E4M3ToFloat32(0x38), 1},
		{"e5m2 max", F8E5M2ToFloat32(0x7b), 57344},
		{"e5m2 min subnormal", F8E5M2ToFloat32(0x01), 0x1p-16},
		{"e5m2 one", F8E5M2ToFloat32(0x3c), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %g, want %g", tc.name, tc.got, tc.want)
		}
	}
}

func le(vals ...uint64) func(size int) []byte {
	return func(size int) []byte {
		b := make([]byte, size*len(vals))
		for i, v := range vals {
			switch size {
			case 1:
				b[i] = byte(v)
			case 2:
				binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
			case 4:
				binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
			case 8:
				binary.LittleEndian.PutUint64(b[8*i:], v)
			}
		}
		return b
	}
}

func TestToFloat32(t *testing.T) {
	f64 := func(f float64) uint64 { return math.Float64bits(f) }
	f32 := func(f float32) uint64 { return uint64(math.Float32bits(f)) }
	neg := func(v int64) uint64 { return uint64(v) }
	for _, tc := range []struct {
		name string
		dt   DType
		src  func(int) []byte
		want []float32
	}{
		{"f32", F32, le(f32(1.5), f32(-0), f32(float32(math.Inf(-1)))), []float32{1.5, 0, float32(math.Inf(-1))}},
		// 1 + 2^-24 is halfway between 1 and 1+2^-23: ties to even → 1;
		// 1 + 3·2^-24 ties to 1 + 2^-22 (even mantissa).
		{"f64 ties to even", F64, le(f64(1+0x1p-24), f64(1+3*0x1p-24), f64(1+0x1p-24+0x1p-40)), []float32{1, 1 + 0x1p-22, 1 + 0x1p-23}},
		{"f64 overflow", F64, le(f64(1e300), f64(-1e300), f64(1e-300)), []float32{float32(math.Inf(1)), float32(math.Inf(-1)), 0}},
		{"bf16", BF16, le(0x3f80, 0xc040, 0x0001), []float32{1, -3, math.Float32frombits(0x00010000)}},
		{"f16", F16, le(0x3c00, 0x7bff, 0x0001, 0xfc00), []float32{1, 65504, 0x1p-24, float32(math.Inf(-1))}},
		{"f8_e4m3", F8E4M3, le(0x38, 0xfe, 0x08), []float32{1, -448, 0x1p-6}},
		{"f8_e5m2", F8E5M2, le(0x3c, 0xfb, 0x7c), []float32{1, -57344, float32(math.Inf(1))}},
		// torch.float8_e8m0fnu: 2^(b-127), 0 is 2^-127, 0xFF the NaN 0x7F800001.
		{"f8_e8m0", F8E8M0, le(127, 128, 0, 0xfe, 0xff), []float32{1, 2, 0x1p-127, 0x1p127, math.Float32frombits(0x7f800001)}},
		{"i64", I64, le(neg(-3), 1<<62, neg(math.MinInt64), (1<<24)+1), []float32{-3, 0x1p62, -0x1p63, 1 << 24}},
		{"u64", U64, le(math.MaxUint64, 7), []float32{0x1p64, 7}},
		{"i32", I32, le(neg(-2147483648), 16777217), []float32{-2147483648, 16777216}},
		{"u32", U32, le(4294967295), []float32{4294967296}},
		{"i16", I16, le(neg(-32768), 32767), []float32{-32768, 32767}},
		{"u16", U16, le(65535), []float32{65535}},
		{"i8", I8, le(0x80, 0x7f, 0xff), []float32{-128, 127, -1}},
		{"u8", U8, le(0xff, 0), []float32{255, 0}},
		{"bool", Bool, le(0, 1, 2), []float32{0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]float32, len(tc.want))
			if err := ToFloat32(dst, tc.src(tc.dt.Size()), tc.dt); err != nil {
				t.Fatal(err)
			}
			for i := range dst {
				if math.Float32bits(dst[i]) != math.Float32bits(tc.want[i]) {
					t.Errorf("[%d] = %g, want %g", i, dst[i], tc.want[i])
				}
			}
		})
	}
}

func TestToFloat32Errors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dst   int
		src   int
		dt    DType
		isErr error
	}{
		{"unknown dtype", 1, 4, "F4", ErrDType},
		{"empty dtype", 1, 4, Unknown, ErrDType},
		{"short source", 2, 7, F32, nil},
		{"long source", 1, 3, F16, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ToFloat32(make([]float32, tc.dst), make([]byte, tc.src), tc.dt)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.isErr != nil && !errors.Is(err, tc.isErr) {
				t.Errorf("error %v is not %v", err, tc.isErr)
			}
		})
	}
}

func BenchmarkToFloat32(b *testing.B) {
	const n = 1 << 20
	dst := make([]float32, n)
	for _, dt := range []DType{F32, F16, BF16, F8E4M3, F64} {
		src := make([]byte, n*dt.Size())
		for i := range src {
			src[i] = byte(i * 7)
		}
		b.Run(string(dt), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if err := ToFloat32(dst, src, dt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestKernelsMatchScalar is the differential test of the block loops and
// assembly kernels: every F16 and BF16 bit pattern, at every length from 0
// to 70 and from unaligned source addresses, must convert to the same bits
// as the one-value functions.
func TestKernelsMatchScalar(t *testing.T) {
	all := make([]byte, 2<<16+1)
	for i := range 1 << 16 {
		binary.LittleEndian.PutUint16(all[1+2*i:], uint16(i))
	}
	for _, tc := range []struct {
		dt  DType
		one func(uint16) float32
	}{
		{F16, F16ToFloat32},
		{BF16, func(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }},
	} {
		t.Run(string(tc.dt), func(t *testing.T) {
			check := func(src []byte) {
				t.Helper()
				dst := make([]float32, len(src)/2)
				if err := ToFloat32(dst, src, tc.dt); err != nil {
					t.Fatal(err)
				}
				for i, v := range dst {
					h := binary.LittleEndian.Uint16(src[2*i:])
					if want := tc.one(h); math.Float32bits(v) != math.Float32bits(want) {
						t.Fatalf("n=%d [%d] %#04x: got %#08x, want %#08x", len(dst), i, h, math.Float32bits(v), math.Float32bits(want))
					}
				}
			}
			check(all[1:]) // odd address: unaligned for every value
			for n := range 71 {
				for off := range 3 {
					check(all[1+off*2+off : 1+off*2+off+2*n])
				}
			}
		})
	}
}

// TestF32Loop checks the byte-order-independent F32 loop, which only
// big-endian hosts use, against the plain copy.
func TestF32Loop(t *testing.T) {
	for n := range 20 {
		src := make([]byte, 4*n)
		for i := range src {
			src[i] = byte(i*37 + 11)
		}
		got, want := make([]float32, n), make([]float32, n)
		f32Loop(got, src)
		for i := range want {
			want[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
		if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Fatalf("n=%d: %v, want %v", n, got, want)
		}
	}
}
