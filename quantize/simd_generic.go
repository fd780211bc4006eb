//go:build !(goexperiment.simd && amd64)

package quantize

// Without GOEXPERIMENT=simd on amd64, the searches run in plain Go.

func makeQXQuants(nmax int, x []float32, L []int8, qw []float32) float32 {
	return makeQXQuantsGeneric(nmax, x, L, qw)
}

func makeQKXQuants(nmax int, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMAD bool) (scale, negMin float32) {
	return makeQKXQuantsGeneric(nmax, x, weights, L, Laux, rmin, rdelta, nstep, useMAD)
}
