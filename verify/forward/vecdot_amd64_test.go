//go:build !purego

package forward

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
)

// TestKFusedAVX2 runs checkKFused with the AVX2 four-input kernels where
// the CPU would pick the VNNI ones, so both stay exact.
func TestKFusedAVX2(t *testing.T) {
	if !useVNNI {
		t.Skip("the VNNI kernels are not in use: TestKFused ran the AVX2 ones")
	}
	useVNNI = false
	defer func() { useVNNI = true }()
	checkKFused(t)
}

// TestQ8RawDot4VNNI checks that the VNNI kernel of four inputs on stored
// Q8_0 blocks (levels + 128 by VPDPBUSD) gives the AVX2 one's bits, with
// the extreme levels (−128 stored, ±127 in the inputs), for 0 to 9 blocks,
// and that the tile kernel (q8RawRows8 with the four inputs twice, reversed
// the second time; three rows) gives those bits too.
func TestQ8RawDot4VNNI(t *testing.T) {
	if !useVNNI {
		t.Skip("no AVX512-VNNI on this CPU")
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for blocks := range 10 {
		raw := make([]byte, 34*blocks)
		var b [4][]int8
		var bu [4][]uint8
		var xd [4][]float32
		for i := range 4 {
			b[i], bu[i], xd[i] = make([]int8, 32*blocks), make([]uint8, 32*blocks), make([]float32, blocks)
		}
		for g := range blocks {
			le.PutUint16(raw[34*g:], quantize.FP32ToFP16(float32(rng.NormFloat64())))
			for j := range 32 {
				raw[34*g+2+j] = byte(rng.Uint32())
			}
			raw[34*g+2+g%32] = 0x80 // −128
			for i := range 4 {
				xd[i][g] = float32(rng.ExpFloat64())
				for j := range 32 {
					v := int8(rng.IntN(255) - 127)
					if j == g%32 {
						v = int8(127 - 254*(i%2))
					}
					b[i][32*g+j], bu[i][32*g+j] = v, uint8(v)^0x80
				}
			}
		}
		got := q8RawDot4(raw, b, bu, xd)
		want := q8RawDot4(raw, b, [4][]uint8{}, xd)
		for i := range 4 {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("%d blocks, input %d: VNNI %g, AVX2 %g", blocks, i, got[i], want[i])
			}
		}
		three := append(append(append([]byte{}, raw...), raw...), raw...)
		for k := range 3 {
			if blocks > 0 {
				three[(k+1)*len(raw)-1] ^= byte(k)
			}
		}
		var bu8 [8][]uint8
		xd8 := make([]float32, 8*blocks)
		for i := range 4 {
			bu8[i], bu8[7-i] = bu[i], bu[i]
			for g := range blocks {
				xd8[8*g+i], xd8[8*g+7-i] = xd[i][g], xd[i][g]
			}
		}
		tile8 := make([]float32, 24)
		if !q8RawRows8(three, bu8, xd8, tile8) && blocks > 0 {
			t.Fatalf("%d blocks: q8RawRows8 did not run", blocks)
		}
		for k := range 3 {
			want := q8RawDot4(three[k*len(raw):(k+1)*len(raw)], b, bu, xd)
			for i := range 4 {
				w := math.Float32bits(want[i])
				if blocks > 0 && (math.Float32bits(tile8[8*k+i]) != w || math.Float32bits(tile8[8*k+7-i]) != w) {
					t.Errorf("%d blocks, row %d, input %d: eight-input tile %g and %g, q8RawDot4 %g", blocks, k, i, tile8[8*k+i], tile8[8*k+7-i], want[i])
				}
			}
		}
	}
}

// TestKFusedDot8 checks that the eight-input fused kernels give, token by
// token, the four-input ones' bits, for 0 to 4 super-blocks.
func TestKFusedDot8(t *testing.T) {
	if !useVNNI {
		t.Skip("no AVX512-VNNI on this CPU")
	}
	rng := rand.New(rand.NewPCG(15, 16))
	for _, typ := range []gguf.Type{gguf.Q4_K, gguf.Q6_K} {
		k := vecKernels[typ]
		for blocks := range 5 {
			var r qrow
			row := randomBlocks(rng, typ, 256*blocks)
			k.unpack(&r, row, 256*blocks)
			stride := blocks*q8KBytes + 4
			a := make([]byte, 8*stride)
			for i := range a {
				a[i] = byte(rng.Uint32())
			}
			for tok := range 8 {
				for b := range blocks {
					le.PutUint32(a[tok*stride+b*q8KBytes:], math.Float32bits(float32(rng.ExpFloat64())))
				}
			}
			got, want := make([]float32, 8), make([]float32, 8)
			r.kf.rows(row, a, stride, 8, got)
			for t0 := 0; t0 < 8; t0 += 4 {
				r.kf.dot4(row, a[t0*stride:], stride, want[t0:t0+4])
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Errorf("%s, %d blocks, token %d: eight-input %g, four-input %g", typ, blocks, i, got[i], want[i])
				}
			}
		}
	}
}

// storedQ8 is a Q8_0 matrix held in memory as stored blocks.
type storedQ8 struct {
	data       []byte
	rows, cols int
}

func (m *storedQ8) Shape() []int64       { return []int64{int64(m.cols), int64(m.rows)} }
func (m *storedQ8) blockType() gguf.Type { return gguf.Q8_0 }
func (m *storedQ8) rowBytes() int        { return m.cols / 32 * 34 }
func (m *storedQ8) ReadRows(r0, n int, dst []float32) error {
	return quantize.Decode(gguf.Q8_0, dst, m.data[r0*m.rowBytes():(r0+n)*m.rowBytes()], n*m.cols)
}
func (m *storedQ8) blockRows(r0, n int) ([]byte, error) {
	return m.data[r0*m.rowBytes() : (r0+n)*m.rowBytes()], nil
}

// TestMulQ8Tiles checks mul on Q8_0 rows with the eight-input VNNI tiles
// (and the last inputs row by row) against mul with the AVX2 kernels, bit
// for bit, for batches around multiples of eight and chunks of rows.
func TestMulQ8Tiles(t *testing.T) {
	if !useVNNI {
		t.Skip("no AVX512-VNNI on this CPU")
	}
	rng := rand.New(rand.NewPCG(17, 18))
	const rows, cols = 70, 96
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	m := &storedQ8{data: make([]byte, rows*cols/32*34), rows: rows, cols: cols}
	if err := quantize.Encode(gguf.Q8_0, m.data, w, rows*cols, nil); err != nil {
		t.Fatal(err)
	}
	mat := &matrix{name: "w", t: m, rows: rows, cols: cols}
	for _, n := range []int{4, 7, 8, 9, 13, 16, 21, 40} {
		x := rowsOf(rng, n, cols)
		var got, want [][]float32
		for _, vnni := range []bool{true, false} {
			useVNNI = vnni
			s := &Session{m: &Model{threads: 2}}
			out := make([][]float32, n)
			for i := range out {
				out[i] = make([]float32, rows)
			}
			if err := s.mul(context.Background(), mat, nil, x, out); err != nil {
				t.Fatal(err)
			}
			if vnni {
				got = out
			} else {
				want = out
			}
		}
		useVNNI = true
		for i := range got {
			for r := range got[i] {
				if math.Float32bits(got[i][r]) != math.Float32bits(want[i][r]) {
					t.Fatalf("%d inputs, input %d, row %d: VNNI %g, AVX2 %g", n, i, r, got[i][r], want[i][r])
				}
			}
		}
	}
}

func rowsOf(rng *rand.Rand, n, cols int) [][]float32 {
	x := make([][]float32, n)
	for i := range x {
		x[i] = make([]float32, cols)
		for j := range x[i] {
			x[i][j] = float32(rng.NormFloat64())
		}
	}
	return x
}
