//go:build goexperiment.simd && amd64

package quantize

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMakeQXQuantsAVX2 compares the vector search with the plain one on
// every nmax ggml uses, with and without weights: same scale bits, same
// levels.
func TestMakeQXQuantsAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(7, 77))
	for it := range 300000 {
		n := []int{16, 32}[r.IntN(2)]
		nmax := []int{4, 8, 16, 32}[r.IntN(4)]
		x := qxTestGroup(r, n)
		var qw []float32
		if r.IntN(2) == 0 {
			qw = make([]float32, n)
			for i := range qw {
				qw[i] = float32(r.ExpFloat64())
				if r.IntN(10) == 0 {
					qw[i] = 0
				}
			}
		}
		var L1, L2 [maxGroup]int8
		want := makeQXQuantsGeneric(nmax, x, L1[:], qw)
		got := makeQXQuantsAVX2(nmax, x, L2[:], qw)
		if math.Float32bits(got) != math.Float32bits(want) || L1 != L2 {
			t.Fatalf("iter %d nmax %d x %v qw %v:\nAVX2  %v %v\nplain %v %v", it, nmax, x, qw, got, L2[:n], want, L1[:n])
		}
	}
}
