//go:build !purego

package quantize

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestEncodeAsmMatchesGeneric encodes the same rows of every type, with and
// without importance weights where the type takes them, once with the amd64
// kernels and once with them switched off, and wants the same bytes: rows
// of Gaussian values with outliers at scales from 1e-30 to 1e30, zeros of
// both signs, tiny and huge values, constant and repeated values, rows of
// one sign whose block extremes are zeros of either sign, half-integer
// ties; rows of
// eleven blocks, so that runs of eight blocks and the blocks after them
// are both covered.
func TestEncodeAsmMatchesGeneric(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(21, 2121))
	for _, typ := range gguf.Types() {
		if !CanEncode(typ) {
			continue
		}
		ims := []bool{false}
		switch {
		case RequiresImatrix(typ):
			ims = []bool{true}
		case UsesImatrix(typ):
			ims = []bool{false, true}
		}
		bs := typ.BlockSize()
		ncols := 11 * bs
		if bs < 32 {
			ncols = 1007
		}
		src := asmTestRows(r, ncols)
		for _, im := range ims {
			name := typ.String()
			var imatrix []float32
			if im {
				name += "+imatrix"
				imatrix = make([]float32, ncols)
				for i := range imatrix {
					imatrix[i] = float32(r.ExpFloat64())
					if r.IntN(10) == 0 {
						imatrix[i] = 0
					}
				}
			}
			t.Run(name, func(t *testing.T) {
				rowSize, err := RowSize(typ, ncols)
				if err != nil {
					t.Fatal(err)
				}
				encode := func(asm bool) []byte {
					defer func(a, f bool) { useAVX2, useF16C = a, f }(useAVX2, useF16C)
					useAVX2, useF16C = asm, asm && useF16C
					dst := make([]byte, len(src)/ncols*rowSize)
					if err := Encode(typ, dst, src, ncols, imatrix); err != nil {
						t.Fatal(err)
					}
					return dst
				}
				got, want := encode(true), encode(false)
				if !bytes.Equal(got, want) {
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("first difference at byte %d (row %d): %#x, want %#x", i, i/rowSize, got[i], want[i])
						}
					}
				}
			})
		}
	}
}

// asmTestRows returns rows of ncols values for TestEncodeAsmMatchesGeneric.
func asmTestRows(r *rand.Rand, ncols int) []float32 {
	var src []float32
	for _, scale := range []float64{1e-30, 1e-3, 0.02, 1, 1e4, 1e30} {
		row := make([]float32, ncols)
		for i := range row {
			v := r.NormFloat64() * scale
			if r.IntN(50) == 0 {
				v *= 20
			}
			row[i] = float32(v)
		}
		src = append(src, row...)
	}
	row := make([]float32, ncols) // zeros of both signs, equal and tiny values
	for i := range row {
		switch r.IntN(5) {
		case 0:
			row[i] = math.Float32frombits(1 << 31)
		case 1:
			row[i] = 0.5
		case 2:
			row[i] = -0.25
		case 3:
			row[i] = math.Float32frombits(uint32(r.IntN(8)))
		}
	}
	src = append(src, row...)
	for _, sign := range []float32{1, -1} {
		// One sign and zeros of both signs: the block minimum (or maximum)
		// is a zero, the first one of the block in ggml.
		row = make([]float32, ncols)
		for i := range row {
			row[i] = sign * abs32(float32(r.NormFloat64()))
			if r.IntN(4) == 0 {
				row[i] = math.Float32frombits(uint32(r.IntN(2)) << 31)
			}
		}
		src = append(src, row...)
	}
	// Half-integers under a maximum of ±127 at every 32nd value: levels at
	// rounding ties for Q8_0, Q8_1 and Q8_K (scale ±1), maxima of both
	// signs tied in magnitude.
	row = make([]float32, ncols)
	for i := range row {
		row[i] = float32(r.IntN(255)-127) + 0.5*float32(r.IntN(2))
		if i%32 == 0 {
			row[i] = float32(127 * (1 - 2*r.IntN(2)))
		}
	}
	src = append(src, row...)
	src = append(src, make([]float32, ncols)...)
	row = make([]float32, ncols)
	for i := range row {
		row[i] = -1.5
	}
	return append(src, row...)
}
