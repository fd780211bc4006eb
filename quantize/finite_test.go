package quantize

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// finiteTestRow returns a row of n values of one of several shapes: the
// usual Gaussian weights, values around the edges of the half and bfloat16
// ranges (2^-14, 2^-24, 65520) and of float32's own (subnormals, near
// FLT_MAX), signed zeros, and now and then a NaN or an infinity.
func finiteTestRow(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	edges := []uint32{0x38800000, 0x33000000, 0x477FF000, 0x00000001, 0x7F7FFFFF, 0x00800000, 0}
	kind := r.IntN(6)
	for i := range x {
		switch kind {
		case 0:
			x[i] = float32(r.NormFloat64() * 0.02)
		case 1:
			x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(80)-40)))
		case 2:
			e := edges[r.IntN(len(edges))]
			b := int64(e) + int64(r.IntN(9)) - 4
			x[i] = math.Float32frombits(uint32(max(0, min(0x7F7FFFFF, b))) | uint32(r.IntN(2))<<31)
		case 3:
			x[i] = math.Float32frombits(uint32(r.IntN(2)) << 31)
		case 4:
			x[i] = math.Float32frombits(r.Uint32()&^0x7F800000 | uint32(r.IntN(0xFF))<<23)
		case 5:
			x[i] = float32(r.NormFloat64())
			if r.IntN(8) == 0 {
				x[i] = 0
			}
		}
	}
	if r.IntN(4) == 0 {
		bad := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0xFFC00001)}
		x[r.IntN(n)] = bad[r.IntN(len(bad))]
	}
	return x
}

// TestEncodeFiniteDifferential checks every fused encoder (codec.encodeFinite)
// against the plain path it stands for, firstNonFinite then encodeRow: the
// same verdict on every row and, for a finite row, the same bytes.
func TestEncodeFiniteDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 33))
	for _, typ := range gguf.Types() {
		c, err := lookup(typ)
		if err != nil || c.encodeFinite == nil {
			continue
		}
		t.Run(typ.String(), func(t *testing.T) {
			bs := typ.BlockSize()
			for iter := range 3000 {
				n := bs * (1 + r.IntN(max(1, 300/bs)))
				src := finiteTestRow(r, n)
				var im []float32
				if c.usesImatrix && r.IntN(2) == 0 {
					im = make([]float32, n)
					for i := range im {
						im[i] = float32(math.Exp(r.NormFloat64()))
					}
				}
				rowSize, err := RowSize(typ, n)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]byte, rowSize)
				ok := c.encodeFinite(got, src, im)
				if want := firstNonFinite(src) < 0; ok != want {
					t.Fatalf("iter %d: encodeFinite says finite=%v, firstNonFinite says %v: %v", iter, ok, want, src)
				}
				if !ok {
					continue
				}
				want := make([]byte, rowSize)
				c.encodeRow(want, src, im)
				if !bytes.Equal(got, want) {
					t.Fatalf("iter %d: encodeFinite and encodeRow differ\nsrc %v\ngot  %x\nwant %x", iter, src, got, want)
				}
			}
		})
	}
}
