package quantize

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

func mustParseType(t testing.TB, name string) gguf.Type {
	t.Helper()
	typ, err := gguf.ParseType(name)
	if err != nil {
		t.Fatal(err)
	}
	return typ
}

// TestValidateGoldenCases feeds ggml's hand-patched buffers to Validate:
// the verdict must be ggml's, and a rejection must carry ggml's diagnosis.
func TestValidateGoldenCases(t *testing.T) {
	cases := goldenExtra(t).Validate
	if len(cases) < 19 {
		t.Fatalf("golden.json has only %d validate cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(goldenDir, c.File))
			if err != nil {
				t.Fatal(err)
			}
			if len(data) != c.NBytes {
				t.Fatalf("%s has %d bytes, golden.json says %d", c.File, len(data), c.NBytes)
			}
			err = Validate(mustParseType(t, c.Type), data)
			if (err == nil) != c.Valid {
				t.Fatalf("Validate = %v, ggml valid = %v", err, c.Valid)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrInvalidData) {
				t.Errorf("error %v does not wrap ErrInvalidData", err)
			}
			// ggml's message minus its function prefix, with our type names.
			want := strings.TrimPrefix(*c.Message, "ggml_validate_row_data: ")
			want = strings.Replace(want, "type q4_0", "type Q4_0", 1)
			if !strings.HasSuffix(err.Error(), want) {
				t.Errorf("error %q does not end with ggml's %q", err, want)
			}
		})
	}
}

// TestValidateGoldenErrorBytes: on ggml's own encodings of rows with a NaN,
// an Inf or a huge value, Validate agrees with ggml_validate_row_data.
func TestValidateGoldenErrorBytes(t *testing.T) {
	n := 0
	for _, c := range goldenExtra(t).Errors {
		if c.EncodedFile == nil || c.Valid == nil {
			continue // aborted in ggml
		}
		n++
		t.Run(filepath.Base(*c.EncodedFile), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(goldenDir, *c.EncodedFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(mustParseType(t, c.Type), data); (err == nil) != *c.Valid {
				t.Fatalf("Validate = %v, ggml valid = %v", err, *c.Valid)
			}
		})
	}
	if n < 80 {
		t.Fatalf("only %d error cases with bytes", n)
	}
}

// TestValidateGoldenEncodings: every ggml encoding of the small input
// validates exactly where ggml's validator accepted it.
func TestValidateGoldenEncodings(t *testing.T) {
	for _, c := range golden(t).Cases {
		if c.EncodedFile == nil || c.Input != "small" {
			continue
		}
		t.Run(caseName(c), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(goldenDir, *c.EncodedFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(gguf.Type(c.ID), data); (err == nil) != c.Valid {
				t.Fatalf("Validate = %v, ggml valid = %v", err, c.Valid)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	f32 := func(vs ...float32) []byte { return f32Bytes(vs) }
	f64 := func(vs ...float64) []byte {
		b := make([]byte, 8*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
		}
		return b
	}
	half := func(hs ...uint16) []byte {
		b := make([]byte, 2*len(hs))
		for i, h := range hs {
			binary.LittleEndian.PutUint16(b[2*i:], h)
		}
		return b
	}
	block := func(typ gguf.Type, n int, patch func(b []byte)) []byte {
		b := make([]byte, n*typ.TypeSize())
		patch(b)
		return b
	}
	nan32 := float32(math.NaN())
	inf32 := float32(math.Inf(1))
	tests := []struct {
		name string
		typ  gguf.Type
		data []byte
		want string // "" = valid
	}{
		{"empty F32", gguf.F32, nil, ""},
		{"F32 finite", gguf.F32, f32(1, -0, math.MaxFloat32, math.SmallestNonzeroFloat32), ""},
		{"F32 inf before nan", gguf.F32, f32(1, inf32, nan32), "found inf value at block 1"},
		{"F32 nan", gguf.F32, f32(1, 2, nan32, inf32), "found nan value at block 2"},
		{"F32 size", gguf.F32, make([]byte, 6), "invalid size 6 for type F32 (type size = 4)"},
		{"F64 narrowed to float", gguf.F64, f64(1, 1e300), "found inf value at block 1"},
		{"F64 max float", gguf.F64, f64(math.MaxFloat32, -1e-300), ""},
		{"F64 nan", gguf.F64, f64(math.NaN()), "found nan value at block 0"},
		{"F16 -inf", gguf.F16, half(0x3C00, 0xFC00), "found inf value at block 1"},
		{"F16 nan", gguf.F16, half(0x7C01), "found nan value at block 0"},
		{"BF16 counts", gguf.BF16, half(0x7F80, 0xFFC1, 0x7FC0, 0x3F80), "found 2 NaNs in row of 4 BF16 values"},
		{"BF16 inf", gguf.BF16, half(0x7F80, 0xFF80, 0x7F7F), "found 2 infinities in row of 3 BF16 values"},
		{"Q4_1 m checked after d", gguf.Q4_1, block(gguf.Q4_1, 3, func(b []byte) {
			binary.LittleEndian.PutUint16(b[20+2:], 0x7E00) // block 1 m
			binary.LittleEndian.PutUint16(b[40:], 0x7C00)   // block 2 d
		}), "found nan value at block 1"},
		{"Q2_K dmin", gguf.Q2_K, block(gguf.Q2_K, 2, func(b []byte) { binary.LittleEndian.PutUint16(b[84+82:], 0xFC00) }), "found inf value at block 1"},
		{"Q3_K d", gguf.Q3_K, block(gguf.Q3_K, 1, func(b []byte) { binary.LittleEndian.PutUint16(b[108:], 0x7D00) }), "found nan value at block 0"},
		{"Q3_K other bytes", gguf.Q3_K, block(gguf.Q3_K, 1, func(b []byte) { copy(b, []byte{0xFF, 0x7F, 0x00, 0x7C}) }), ""},
		{"Q6_K d", gguf.Q6_K, block(gguf.Q6_K, 1, func(b []byte) { binary.LittleEndian.PutUint16(b[208:], 0x7C00) }), "found inf value at block 0"},
		{"TQ2_0 d", gguf.TQ2_0, block(gguf.TQ2_0, 2, func(b []byte) { binary.LittleEndian.PutUint16(b[66+64:], 0x7C00) }), "found inf value at block 1"},
		{"Q8_K float d", gguf.Q8_K, block(gguf.Q8_K, 1, func(b []byte) { binary.LittleEndian.PutUint32(b, 0x7FC00000) }), "found nan value at block 0"},
		{"IQ1_M scale", gguf.IQ1_M, block(gguf.IQ1_M, 2, func(b []byte) {
			// fp16 0x7C00 spread over the top nibbles of block 1's four scale words
			binary.LittleEndian.PutUint16(b[56+48+4:], 0xC000)
			binary.LittleEndian.PutUint16(b[56+48+6:], 0x7000)
		}), "found inf value at block 1"},
		{"IQ1_M low nibbles", gguf.IQ1_M, block(gguf.IQ1_M, 1, func(b []byte) {
			for i := 48; i < 56; i++ {
				b[i] = 0x0F
			}
		}), ""},
		{"MXFP4 e", gguf.MXFP4, block(gguf.MXFP4, 3, func(b []byte) { b[2*17] = 0xFF }), "found invalid e value 255 at block 2"},
		{"NVFP4 anything", gguf.NVFP4, block(gguf.NVFP4, 1, func(b []byte) { b[0] = 0xFF }), ""},
		{"I32 anything", gguf.I32, []byte{0xFF, 0xFF, 0x80, 0x7F}, ""},
		{"I64 size", gguf.I64, make([]byte, 12), "invalid size 12 for type I64 (type size = 8)"},
		{"Q8_1", gguf.Q8_1, make([]byte, 36), "invalid type 9"},
		{"Q8_1 size first", gguf.Q8_1, make([]byte, 35), "invalid size 35"},
		{"removed", gguf.Q4_2, make([]byte, 18), "invalid type 4"},
		{"unknown", gguf.Type(99), nil, "invalid type 99"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.typ, tt.data)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalidData) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want ErrInvalidData with %q", err, tt.want)
			}
		})
	}
}
