//go:build !amd64 || purego

package quantize

// Without the amd64 assembly, the searches run in plain Go.

func makeQXQuants(nmax int, x []float32, L []int8, qw []float32) float32 {
	return makeQXQuantsGeneric(nmax, x, L, qw)
}

func qkxSearch8(nmax int, x *[qkK]float32, w *[8][qkxVec]float32, L *[qkK]uint8, rmin, rdelta float32, nstep int, scales, mins *[8]float32) {
	qkxSearch8Generic(nmax, x, w, L, rmin, rdelta, nstep, scales, mins)
}

func qxSearch8(nmax int, x []float32, n int, L []int8, qw []float32, scales []float32) {
	qxSearch8Generic(nmax, x, n, L, qw, scales)
}
