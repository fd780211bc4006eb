package quantize

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// Property tests of the legacy (legacy.go) and K-quant (kquants.go) codecs,
// on inputs the golden set does not have. Bit-exactness with ggml itself is
// checked by the golden tests.

// legacyKTypes are the types of legacy.go and kquants.go.
var legacyKTypes = []gguf.Type{
	gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1,
	gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.Q8_K,
}

// halfFields lists the byte offsets of the fp16 fields (d, dmin, m) of one
// block of each type; Q8_K's float32 d is at offset 0.
var halfFields = map[gguf.Type][]int{
	gguf.Q4_0: {0}, gguf.Q4_1: {0, 2}, gguf.Q5_0: {0}, gguf.Q5_1: {0, 2},
	gguf.Q2_K: {80, 82}, gguf.Q3_K: {108}, gguf.Q4_K: {0, 2}, gguf.Q5_K: {0, 2}, gguf.Q6_K: {208},
}

func gaussRow(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

func positiveWeights(r *rand.Rand, n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(math.Exp(r.NormFloat64()))
	}
	return w
}

// encodeFilled encodes src with dst pre-filled with fill, so that a byte the
// encoder forgets to write shows up as a difference between two fills.
func encodeFilled(t *testing.T, typ gguf.Type, src []float32, ncols int, imatrix []float32, fill byte) []byte {
	t.Helper()
	rs, err := RowSize(typ, ncols)
	if err != nil {
		t.Fatal(err)
	}
	dst := bytes.Repeat([]byte{fill}, rs*len(src)/ncols)
	if err := Encode(typ, dst, src, ncols, imatrix); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestLegacyKEdgeRows encodes hostile rows into buffers pre-filled with two
// different patterns: every byte must be written (ggml writes every byte,
// except Q8_K's bsums of an all-zero block, which are written as zeros
// here), and a row that is all zeros must decode to zeros.
func TestLegacyKEdgeRows(t *testing.T) {
	const n = 512
	r := rand.New(rand.NewPCG(1, 2))
	rows := map[string][]float32{
		"zeros":    make([]float32, n),
		"negzeros": make([]float32, n),
		"constant": make([]float32, n),
		"outlier":  gaussRow(r, n, 1e-3),
		"maxfloat": make([]float32, n),
		"subnorm":  make([]float32, n),
		"tiny":     gaussRow(r, n, 1e-21), // x² subnormal: σ² underflows
		"huge":     gaussRow(r, n, 1e30),
		"halfzero": gaussRow(r, n, 1),
	}
	for i := range n {
		rows["negzeros"][i] = float32(math.Copysign(0, -1))
		rows["constant"][i] = -3.25
		rows["maxfloat"][i] = float32(i%3-1) * math.MaxFloat32
		rows["subnorm"][i] = math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(i%2)<<31)
		if i < n/2 {
			rows["halfzero"][i] = 0
		}
	}
	rows["outlier"][137] = 3e38
	weights := map[string][]float32{"none": nil, "exp": positiveWeights(r, n), "zero": make([]float32, n)}
	for _, typ := range legacyKTypes {
		for rname, row := range rows {
			for wname, w := range weights {
				if w != nil && !UsesImatrix(typ) {
					continue
				}
				t.Run(typ.String()+"/"+rname+"/"+wname, func(t *testing.T) {
					a := encodeFilled(t, typ, row, n, w, 0xA5)
					b := encodeFilled(t, typ, row, n, w, 0x5A)
					if !bytes.Equal(a, b) {
						t.Fatalf("%s leaves bytes unwritten: %s", typ, firstDiff(a, b, len(a)))
					}
					if rname != "zeros" && rname != "negzeros" {
						return
					}
					dec := make([]float32, n)
					if err := Decode(typ, dec, a, n); err != nil {
						t.Fatal(err)
					}
					for i, v := range dec {
						if v != 0 {
							t.Fatalf("zero row decodes to %v at %d", v, i)
						}
					}
				})
			}
		}
	}
}

// TestLegacyKBlockIndependence checks on rows of 256·k values that each
// super-block is encoded on its own: the row's encoding is the concatenation
// of the encodings of its 256-value pieces. That holds in ggml for every type
// here except the legacy types with an imatrix, whose σ² is the mean square
// of the whole row; for those the test checks that a change confined to the
// last block does change the first block's bytes (σ² sees it).
func TestLegacyKBlockIndependence(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{1, 2, 3, 5} {
		n := 256 * k
		row := make([]float32, 0, n)
		for b := range k {
			row = append(row, gaussRow(r, 256, math.Pow(10, float64(b%4)-2))...)
		}
		w := positiveWeights(r, n)
		for _, typ := range legacyKTypes {
			for _, im := range [][]float32{nil, w} {
				if im != nil && !UsesImatrix(typ) {
					continue
				}
				name := typ.String() + "/" + string(rune('0'+k))
				if im != nil {
					name += "+imatrix"
				}
				t.Run(name, func(t *testing.T) {
					whole := encodeFilled(t, typ, row, n, im, 0)
					if im != nil && typ.BlockSize() == 32 {
						if k == 1 {
							t.Skip("one block: nothing to compare")
						}
						// Rows of one magnitude, so that σ² matters next
						// to x²; quadrupling the last 256 values must
						// change the encoding of the first 256.
						flat := gaussRow(r, n, 1)
						changed := append([]float32(nil), flat...)
						for i := n - 256; i < n; i++ {
							changed[i] *= 4
						}
						a := encodeFilled(t, typ, flat, n, im, 0)
						b := encodeFilled(t, typ, changed, n, im, 0)
						head := 256 / 32 * typ.TypeSize()
						if bytes.Equal(a[:head], b[:head]) {
							t.Fatal("the first blocks ignore the rest of the row; σ² must be the row's")
						}
						return
					}
					var pieces []byte
					for b := range k {
						var wb []float32
						if im != nil {
							wb = im[256*b : 256*(b+1)]
						}
						pieces = append(pieces, encodeFilled(t, typ, row[256*b:256*(b+1)], 256, wb, 0)...)
					}
					if !bytes.Equal(whole, pieces) {
						t.Fatal(firstDiff(whole, pieces, len(whole)))
					}
				})
			}
		}
	}
}

// TestLegacyKScaleInvariance scales Gaussian rows by powers of two that keep
// every block scale a normal fp16 number: every step of ggml's searches is
// homogeneous in x (and in the weights), so the quants must be identical and
// each fp16 scale must be the unscaled one times 2^e exactly.
func TestLegacyKScaleInvariance(t *testing.T) {
	const n = 1024
	r := rand.New(rand.NewPCG(5, 6))
	base := gaussRow(r, n, 1)
	w := positiveWeights(r, n)
	for _, typ := range legacyKTypes {
		for _, im := range [][]float32{nil, w} {
			if im != nil && !UsesImatrix(typ) {
				continue
			}
			name := typ.String()
			if im != nil {
				name += "+imatrix"
			}
			t.Run(name, func(t *testing.T) {
				ref := encodeFilled(t, typ, base, n, im, 0)
				for _, e := range []int{-3, -1, 2, 5} {
					x := make([]float32, n)
					for i, v := range base {
						x[i] = float32(math.Ldexp(float64(v), e))
					}
					got := encodeFilled(t, typ, x, n, im, 0)
					checkScaled(t, typ, ref, got, e)
				}
			})
		}
	}
}

// checkScaled compares two encodings block by block: the scale fields must
// differ by exactly 2^e, every other byte must be equal.
func checkScaled(t *testing.T, typ gguf.Type, ref, got []byte, e int) {
	t.Helper()
	bs := typ.TypeSize()
	for off := 0; off < len(ref); off += bs {
		a, b := bytes.Clone(ref[off:off+bs]), bytes.Clone(got[off:off+bs])
		if typ == gguf.Q8_K {
			da := math.Float32frombits(binary.LittleEndian.Uint32(a))
			db := math.Float32frombits(binary.LittleEndian.Uint32(b))
			if float64(db) != math.Ldexp(float64(da), e) {
				t.Fatalf("2^%d: block %d d = %v, want %v·2^%d", e, off/bs, db, da, e)
			}
			clear(a[:4])
			clear(b[:4])
		}
		for _, f := range halfFields[typ] {
			ha, hb := halfAt(a[f:]), halfAt(b[f:])
			if float64(hb) != math.Ldexp(float64(ha), e) {
				t.Fatalf("2^%d: block %d fp16 field at %d = %v, want %v·2^%d", e, off/bs, f, hb, ha, e)
			}
			a[f], a[f+1], b[f], b[f+1] = 0, 0, 0, 0
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("2^%d: block %d quants differ: %s", e, off/bs, firstDiff(b, a, bs))
		}
	}
}

// TestLegacyKRoundTripError bounds the relative RMS error of
// decode(encode(x)) on Gaussian rows of other lengths than the golden ones,
// with and without weights; the bounds are about 1.5× what ggml's codecs
// reach on them, so a packing or sign error anywhere fails.
func TestLegacyKRoundTripError(t *testing.T) {
	bounds := map[gguf.Type]float64{
		gguf.Q4_0: 0.13, gguf.Q4_1: 0.12, gguf.Q5_0: 0.07, gguf.Q5_1: 0.055,
		gguf.Q2_K: 0.45, gguf.Q3_K: 0.23, gguf.Q4_K: 0.11, gguf.Q5_K: 0.055,
		gguf.Q6_K: 0.028, gguf.Q8_K: 0.011,
	}
	r := rand.New(rand.NewPCG(7, 8))
	const n = 768
	src := append(gaussRow(r, n, 0.02), gaussRow(r, n, 300)...)
	w := positiveWeights(r, n)
	for _, typ := range legacyKTypes {
		for _, im := range [][]float32{nil, w} {
			if im != nil && !UsesImatrix(typ) {
				continue
			}
			name := typ.String()
			if im != nil {
				name += "+imatrix"
			}
			t.Run(name, func(t *testing.T) {
				enc := encodeFilled(t, typ, src, n, im, 0)
				dec := make([]float32, len(src))
				if err := Decode(typ, dec, enc, n); err != nil {
					t.Fatal(err)
				}
				for row := range 2 {
					var num, den float64
					for i := row * n; i < (row+1)*n; i++ {
						d := float64(dec[i]) - float64(src[i])
						num += d * d
						den += float64(src[i]) * float64(src[i])
					}
					if rel := math.Sqrt(num / den); rel > bounds[typ] {
						t.Errorf("row %d: relative RMS error %.4f > %.4f", row, rel, bounds[typ])
					}
				}
			})
		}
	}
}

// TestQ8KBsums checks Q8_K's bsums against its quants and that an all-zero
// block has d = 0, zero quants and zero bsums even over a dirty buffer.
func TestQ8KBsums(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	row := append(gaussRow(r, 256, 5), make([]float32, 256)...)
	enc := encodeFilled(t, gguf.Q8_K, row, 512, nil, 0xFF)
	blk := enc[:q8KBytes]
	for j := range 16 {
		var sum int
		for _, q := range blk[4+16*j : 4+16*j+16] {
			sum += int(int8(q))
		}
		if got := int(int16(binary.LittleEndian.Uint16(blk[4+256+2*j:]))); got != sum {
			t.Errorf("bsums[%d] = %d, quants sum to %d", j, got, sum)
		}
	}
	if zero := enc[q8KBytes:]; !bytes.Equal(zero, make([]byte, q8KBytes)) {
		t.Errorf("all-zero block encodes as %x…", zero[:16])
	}
}

// TestGetScaleMinK4 round-trips every 6-bit scale and min through Q4_K's
// packing.
func TestGetScaleMinK4(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 1000 {
		var ls, lm [8]uint8
		var q [12]byte
		for j := range 8 {
			ls[j], lm[j] = uint8(r.IntN(64)), uint8(r.IntN(64))
			putScaleMinK4(j, &q, ls[j], lm[j])
		}
		for j := range 8 {
			if s, m := getScaleMinK4(j, &q); s != ls[j] || m != lm[j] {
				t.Fatalf("sub-block %d: got %d/%d, packed %d/%d (%x)", j, s, m, ls[j], lm[j], q)
			}
		}
	}
}

// BenchmarkLegacyK encodes a 256×4096 Gaussian matrix (bench_test.go's
// benchInput) on one goroutine with each type of legacy.go and kquants.go,
// with and without an imatrix; MB/s counts float32 input bytes.
//
//	go test ./quantize -run '^$' -bench LegacyK
func BenchmarkLegacyK(b *testing.B) {
	const nrows = 256
	src, weights := benchInput(nrows)
	for _, typ := range legacyKTypes {
		for _, im := range [][]float32{nil, weights} {
			if im != nil && !UsesImatrix(typ) {
				continue
			}
			name := typ.String()
			if im != nil {
				name += "+imatrix"
			}
			b.Run(name, func(b *testing.B) {
				rs, err := RowSize(typ, benchCols)
				if err != nil {
					b.Fatal(err)
				}
				dst := make([]byte, nrows*rs)
				b.SetBytes(int64(4 * len(src)))
				for b.Loop() {
					if err := Encode(typ, dst, src, benchCols, im); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
