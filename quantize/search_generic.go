//go:build !amd64 || purego

package quantize

// Without the amd64 assembly, the searches run in plain Go.

func makeQXQuants(nmax int, x []float32, L []int8, qw []float32) float32 {
	return makeQXQuantsGeneric(nmax, x, L, qw)
}

func qkxSearch8(nmax int, x *[qkK]float32, w *[8][qkxVec]float32, L *[qkK]uint8, rmin, rdelta float32, nstep int, scales, mins *[8]float32) {
	qkxSearch8Generic(nmax, x, w, L, rmin, rdelta, nstep, scales, mins)
}
