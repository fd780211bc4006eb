//go:build !amd64 || purego

package quantize

// Without the amd64 assembly, the searches run in plain Go.

func makeQXQuants(nmax int, x []float32, L []int8, qw []float32) float32 {
	return makeQXQuantsGeneric(nmax, x, L, qw)
}

func qkxSearch8(nmax int, x []float32, n int, w []float32, L []uint8, p qkxParams, scales, mins []float32) {
	qkxSearch8Generic(nmax, x, n, w, L, p, scales, mins)
}

func qxSearch8(nmax int, x []float32, n int, L []int8, qw []float32, scales []float32) {
	qxSearch8Generic(nmax, x, n, L, qw, scales)
}

func q3Search8(nmax int, x []float32, L []int8, scales []float32) {
	q3Search8Generic(nmax, x, L, scales)
}
