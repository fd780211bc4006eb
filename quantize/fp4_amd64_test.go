//go:build !purego

package quantize

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMXFP4AVX2Edges compares the MXFP4 kernel with the Go form on blocks
// whose largest magnitude sits at the kernel's limits: just below and at
// powers of two (where log2f rounds up to the next integer), at the
// smallest exponents it takes and below, with values on the grid's
// midpoints and zeros of both signs.
func TestMXFP4AVX2Edges(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(4, 44))
	const nb = 4096
	src := make([]float32, nb*qkMXFP4)
	for i := range nb {
		x := src[i*qkMXFP4 : (i+1)*qkMXFP4]
		bexp := uint32(1 + r.IntN(254))
		if r.IntN(2) == 0 {
			bexp = uint32(1 + r.IntN(8))
		}
		amax := math.Float32frombits(bexp<<23 | uint32(0x7FFFFF-r.IntN(0x2000)))
		if r.IntN(4) == 0 {
			amax = math.Float32frombits(bexp << 23)
		}
		// The grid's d, 2^(b-130), or twice it where log2f rounds up.
		d := float32(math.Ldexp(1, int(bexp)-130+r.IntN(2)))
		for j := range x {
			switch r.IntN(4) {
			case 0:
				x[j] = fp4Mid[r.IntN(7)] * d
			case 1:
				x[j] = math.Float32frombits(uint32(r.IntN(2)) << 31)
			default:
				x[j] = float32(r.Float64()) * amax
			}
			if r.IntN(2) == 0 {
				x[j] = -x[j]
			}
		}
		x[r.IntN(qkMXFP4)] = amax
	}
	got := make([]byte, nb*mxfp4Bytes)
	want := make([]byte, nb*mxfp4Bytes)
	encodeRowMXFP4(got, src, nil)
	encodeRowMXFP4Generic(want, src, nil)
	if !bytes.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("first difference at byte %d (block %d): %#x, want %#x", i, i/mxfp4Bytes, got[i], want[i])
			}
		}
	}
}
