//go:build !(goexperiment.simd && amd64)

package quantize

// Without GOEXPERIMENT=simd on amd64, the searches run in plain Go.

func makeQXQuants(nmax int, x []float32, L []int8, qw []float32) float32 {
	return makeQXQuantsGeneric(nmax, x, L, qw)
}
