package quantize

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestIQ3Tables checks the encoder tables built from kgrid_256/kgrid_512
// against ggml: the grid against the decoder grids of ggml-common.h, and the
// map and neighbour lists against the SHA-256 of ggml's own kmap_q3xs
// (4096 int32, little-endian) followed by kneighbors_q3xs (uint16), dumped
// after iq3xs_init_impl from a build of llama.cpp 0c1e570's ggml-quants.c
// (the_grid itself is the odd values 2l+1 of the levels checked here).
func TestIQ3Tables(t *testing.T) {
	// iq3xxs_grid stores level l as these byte values.
	xxsBytes := [8]uint32{4, 12, 20, 28, 36, 44, 52, 62}
	tests := []struct {
		name       string
		tables     *iq3Tables
		decode     []uint32
		value      func(l int8) uint32
		neighbours int
		sha        string
	}{
		{"IQ3_XXS", iq3XXSTables(), iq3xxsGrid[:], func(l int8) uint32 { return xxsBytes[l] }, 22825,
			"90f83a573a81490268b4b7ee07103337b5e5baa390e7a3fb01cc53d6479c3157"},
		{"IQ3_S", iq3STables(), iq3sGrid[:], func(l int8) uint32 { return uint32(2*l + 1) }, 28317,
			"5274e281861b4ced719fb95b1a2192c067ee5c7a02c024eae98c243f3a728758"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb := tc.tables
			for k := range tb.levels {
				var want uint32
				for i, l := range tb.levels[k] {
					want |= tc.value(l) << (8 * i)
				}
				if tc.decode[k] != want {
					t.Fatalf("point %d: decoder grid %#08x, encoder levels give %#08x", k, tc.decode[k], want)
				}
			}
			if len(tb.neighbours) != tc.neighbours {
				t.Errorf("neighbour table has %d entries, ggml's %d", len(tb.neighbours), tc.neighbours)
			}
			h := sha256.New()
			binary.Write(h, binary.LittleEndian, tb.kmap[:])
			binary.Write(h, binary.LittleEndian, tb.neighbours)
			if got := hex.EncodeToString(h.Sum(nil)); got != tc.sha {
				t.Errorf("map+neighbours sha256 %s, ggml %s", got, tc.sha)
			}
		})
	}
}

// TestIQ3Concurrent encodes from several goroutines at once, the first
// use of the lazily built tables included when run alone (go test -race).
func TestIQ3Concurrent(t *testing.T) {
	src := readF32(t, "input_small.f32")
	for _, typ := range []gguf.Type{gguf.IQ3_XXS, gguf.IQ3_S} {
		rs, _ := RowSize(typ, 512)
		out := make([][]byte, 4)
		var wg sync.WaitGroup
		for g := range out {
			out[g] = make([]byte, rs*len(src)/512)
			wg.Go(func() {
				if err := Encode(typ, out[g], src, 512, nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for g := range out[1:] {
			if !bytes.Equal(out[0], out[g+1]) {
				t.Fatalf("%s: goroutine %d encoded differently", typ, g+1)
			}
		}
	}
}

// TestIQ3KSigns compares iq3KSigns with ksigns_iq2xs of ggml-common.h,
// copied here as data.
func TestIQ3KSigns(t *testing.T) {
	ksigns := [128]uint8{
		0, 129, 130, 3, 132, 5, 6, 135, 136, 9, 10, 139, 12, 141, 142, 15,
		144, 17, 18, 147, 20, 149, 150, 23, 24, 153, 154, 27, 156, 29, 30, 159,
		160, 33, 34, 163, 36, 165, 166, 39, 40, 169, 170, 43, 172, 45, 46, 175,
		48, 177, 178, 51, 180, 53, 54, 183, 184, 57, 58, 187, 60, 189, 190, 63,
		192, 65, 66, 195, 68, 197, 198, 71, 72, 201, 202, 75, 204, 77, 78, 207,
		80, 209, 210, 83, 212, 85, 86, 215, 216, 89, 90, 219, 92, 221, 222, 95,
		96, 225, 226, 99, 228, 101, 102, 231, 232, 105, 106, 235, 108, 237, 238, 111,
		240, 113, 114, 243, 116, 245, 246, 119, 120, 249, 250, 123, 252, 125, 126, 255,
	}
	for s, want := range ksigns {
		if got := iq3KSigns(uint32(s)); got != want {
			t.Errorf("ksigns[%d] = %d, ggml %d", s, got, want)
		}
	}
}

// iq34CheckEncoding encodes src (rows of ncols) as typ and compares with
// ggml's bytes, given in hex.
func iq34CheckEncoding(t *testing.T, typ gguf.Type, src []float32, ncols int, imatrix []float32, wantHex string) []byte {
	t.Helper()
	want, err := hex.DecodeString(wantHex)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if err := Encode(typ, got, src, ncols, imatrix); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s encoding differs from ggml's: %s", typ, firstDiff(got, want, len(want)))
	}
	return got
}

// TestIQ3SZeroSubBlockShift: quantize_row_iq3_s_impl skips an all-zero
// 32-value sub-block before advancing its qs and signs pointers, so the
// later sub-blocks' grid indexes and signs are written one slot early and
// the last slots stay zero. Here sub-block 1 is zero; the bytes are ggml's.
func TestIQ3SZeroSubBlockShift(t *testing.T) {
	src := make([]float32, 256)
	for i := range src {
		if i < 32 || i >= 64 {
			src[i] = float32((i*37)%17-8) / 4
		}
	}
	iq34CheckEncoding(t, gguf.IQ3_S, src, 256, nil,
		"b21c3653f9e105da68efa93653f9e105da68ef91ce7a53fb2bfcbaa93689f9e105da68ef91ce7a53fb2bfcbaa93689f9e1"+
			"05da68ef91ce7a53fb00000000000000007600ed76dbedb6dbc7318e63711ce338c6718ce318c7318e631cc7388e711ce3"+
			"38c6718c000000000fffffff")
}

// TestIQ3HugeInput: errors/input_huge.f32 is finite (one value is 1e10),
// so ggml encodes it without aborting; its block scale overflows fp16 to
// +Inf. The expected bytes and decoded hashes are ggml's
// (shared/golden/quant/errors/<T>.huge.bin and golden.json error_cases).
func TestIQ3HugeInput(t *testing.T) {
	tests := []struct {
		typ        gguf.Type
		enc, decSH string
	}{
		{gguf.IQ3_XXS, "007c0044000000000000a1fa6c9ff77180ec02d93b8dd252ea58196adf2582e9094f78d81583f45cf159500c2851a246cc8ca88faf40e4c67c6653a25f20d354b5d65938e8ffc19f1d0903da970746973c0fdf8af4090701f60ee7972e00b634ea09",
			"3d4fce42aa2c778bc1eed65ad775d1cad48ef7101a4b1b954b323c5b338525ea"},
		{gguf.IQ3_S, "007c0014000000000000eace70e59d8afb9d818b021a7c8eb63d84dbc83c02bb0febe9841334ad02c094981a529c486f6e28512c1d78d29f35e09e48befbad4073b600925a3472d037d259f2a4ef413f76490bb05e3dc62e72f95f15d2cf87a2f857e7ad7a81376928ef0f000000",
			"15c5328cdce6fd4adc258c2e9c84f1515bf06a460095a998e7d08f615d20a5a1"},
	}
	for _, tc := range tests {
		t.Run(tc.typ.String(), func(t *testing.T) {
			iq34CheckHuge(t, tc.typ, tc.enc, tc.decSH)
		})
	}
}

// iq34CheckHuge checks the encoding of errors/input_huge.f32 and the
// SHA-256 of decoding it against ggml's.
func iq34CheckHuge(t *testing.T, typ gguf.Type, encHex, decSHA string) {
	t.Helper()
	src := readF32(t, "errors/input_huge.f32")
	enc := iq34CheckEncoding(t, typ, src, len(src), nil, encHex)
	dec := make([]float32, len(src))
	if err := Decode(typ, dec, enc, len(src)); err != nil {
		t.Fatal(err)
	}
	if got := sha(f32Bytes(dec)); got != decSHA {
		t.Errorf("decoding sha256 %s, ggml %s", got, decSHA)
	}
}

// iq34Row is a named test row.
type iq34Row struct {
	name string
	x    []float32
}

// iq34EdgeRows are hostile 512-value rows for the property tests.
func iq34EdgeRows() []iq34Row {
	r := rand.New(rand.NewPCG(3, 4))
	var rows []iq34Row
	fill := func(name string, f func(i int) float32) {
		x := make([]float32, 512)
		for i := range x {
			x[i] = f(i)
		}
		rows = append(rows, iq34Row{name, x})
	}
	fill("zeros", func(int) float32 { return 0 })
	fill("negative zeros", func(int) float32 { return float32(math.Copysign(0, -1)) })
	fill("all equal", func(int) float32 { return 0.75 })
	fill("all equal negative", func(int) float32 { return -2 })
	fill("one outlier", func(i int) float32 {
		if i == 77 {
			return 1e4
		}
		return float32(r.NormFloat64())
	})
	fill("subnormals", func(i int) float32 { return math.Float32frombits(uint32(i*9973)%(1<<23)) * float32(1-2*(i%2)) })
	fill("below eps", func(i int) float32 { return float32(r.NormFloat64() * 1e-10) })
	fill("odd sign count", func(i int) float32 { return float32(1+i%5) * float32(1-2*(i%8/7)) })
	fill("gaussian", func(int) float32 { return float32(r.NormFloat64()) })
	fill("sparse", func(i int) float32 {
		if i%32 < 28 {
			return 0
		}
		return float32(r.NormFloat64())
	})
	return rows
}

// iq34Extremes are finite rows and weights that overflow float32 inside
// the search (x² or the weighted sums reach +Inf). ggml aborts on several
// of them (GGML_ASSERT grid_index >= 0 or scale >= 0); the Go encoders must
// still return without panicking.
func iq34Extremes() (rows map[string][]float32, weights map[string][]float32) {
	rows = map[string][]float32{}
	weights = map[string][]float32{"none": nil}
	x1, x2, x3 := make([]float32, 512), make([]float32, 512), make([]float32, 512)
	w1, w2, w3 := make([]float32, 512), make([]float32, 512), make([]float32, 512)
	for i := range 512 {
		x1[i] = math.MaxFloat32 * float32(1-2*(i%2))
		x2[i] = float32(math.Ldexp(1, 60+i%60)) * float32(1-2*(i%3%2))
		x3[i] = float32(i%7) * 1e-3
		if i%11 == 0 {
			x3[i] = 3e38
		}
		w1[i] = 1e38
		w2[i] = -float32(i % 5)
		w3[i] = float32(i % 2)
	}
	rows["max float"], rows["2^60..2^119"], rows["mixed"] = x1, x2, x3
	weights["huge"], weights["negative"], weights["zero or one"] = w1, w2, w3
	return rows, weights
}

func TestIQ3EdgeRows(t *testing.T) {
	iq34RoundTrip(t, []gguf.Type{gguf.IQ3_XXS, gguf.IQ3_S}, 0.55)
}

// iq34RoundTrip encodes the edge rows with and without weights, checks that
// zero rows encode to zero bytes and that decoding gives finite values
// within maxRel relative RMS error of the input (for rows above the
// all-zero threshold), and that the extreme rows do not panic.
func iq34RoundTrip(t *testing.T, types []gguf.Type, maxRel float64) {
	r := rand.New(rand.NewPCG(5, 6))
	w := make([]float32, 512)
	for i := range w {
		w[i] = float32(r.ExpFloat64())
	}
	for _, typ := range types {
		for _, row := range iq34EdgeRows() {
			name, x := row.name, row.x
			for _, im := range [][]float32{nil, w} {
				n := typ.String() + "/" + name
				if im != nil {
					n += "+imatrix"
				}
				t.Run(n, func(t *testing.T) {
					rs, err := RowSize(typ, len(x))
					if err != nil {
						t.Fatal(err)
					}
					enc := make([]byte, rs)
					if err := Encode(typ, enc, x, len(x), im); err != nil {
						t.Fatal(err)
					}
					dec := make([]float32, len(x))
					if err := Decode(typ, dec, enc, len(x)); err != nil {
						t.Fatal(err)
					}
					var num, den float64
					for i := range x {
						if math.IsNaN(float64(dec[i])) || math.IsInf(float64(dec[i]), 0) {
							t.Fatalf("value %d decodes to %v", i, dec[i])
						}
						d := float64(dec[i]) - float64(x[i])
						num += d * d
						den += float64(x[i]) * float64(x[i])
					}
					switch {
					case den == 0 && name != "subnormals":
						for i, v := range dec {
							if v != 0 {
								t.Fatalf("zero row: value %d decodes to %v", i, v)
							}
						}
					case den > 1e-12 && math.Sqrt(num/den) > maxRel:
						t.Errorf("relative RMS error %.3f > %.3f", math.Sqrt(num/den), maxRel)
					}
				})
			}
		}
		rows, weights := iq34Extremes()
		for rn, x := range rows {
			for wn, im := range weights {
				t.Run(typ.String()+"/extreme "+rn+"/weights "+wn, func(t *testing.T) {
					rs, _ := RowSize(typ, len(x))
					if err := Encode(typ, make([]byte, rs), x, len(x), im); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// iq34Bench encodes the golden large input (256×4096) as each type, with
// and without its importance weights.
func iq34Bench(b *testing.B, types []gguf.Type) {
	src := readF32(b, "input_large.f32")
	w := readF32(b, "weights_4096.f32")
	for _, typ := range types {
		for _, im := range [][]float32{nil, w} {
			name := typ.String()
			if im != nil {
				name += "+imatrix"
			}
			b.Run(name, func(b *testing.B) {
				rs, _ := RowSize(typ, 4096)
				dst := make([]byte, rs*len(src)/4096)
				b.SetBytes(int64(4 * len(src)))
				for b.Loop() {
					if err := Encode(typ, dst, src, 4096, im); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkIQ3(b *testing.B) {
	iq34Bench(b, []gguf.Type{gguf.IQ3_XXS, gguf.IQ3_S})
}
