// Package benchweights makes the synthetic weight matrix that the quantizer
// benchmarks encode: the same numbers on every machine and in every run, so
// that figures taken by `go test -bench ./quantize` and by
// scripts/bench-encoders.sh (ggufkit beside ggml's reference quantizers)
// describe the same input.
package benchweights

import (
	"math"
	"math/rand/v2"
)

// Matrix returns nrows×cols float32 values drawn from a Gaussian of standard
// deviation 0.02, one in 500 of them multiplied by 20 (the outliers of real
// projection weights), and a positive importance vector of cols values
// (log-normal, as the column sums of squared activations an imatrix holds
// spread over orders of magnitude). The seed is fixed.
func Matrix(nrows, cols int) (src, imatrix []float32) {
	r := rand.New(rand.NewPCG(0x6767, 0x7566))
	src = make([]float32, nrows*cols)
	for i := range src {
		v := r.NormFloat64() * 0.02
		if r.IntN(500) == 0 {
			v *= 20
		}
		src[i] = float32(v)
	}
	imatrix = make([]float32, cols)
	for i := range imatrix {
		imatrix[i] = float32(math.Exp(r.NormFloat64()))
	}
	return src, imatrix
}
