package forward

import "github.com/ggufkit/ggufkit/readers"

// F16 rows are multiplied on their stored values: the kernels (dotF16,
// dotF16x4; VCVTPH2PS on amd64) convert the weights as they load them, so
// the row is read once from the mapped file instead of being written out
// as float32 and read again, which halves the memory traffic of generation.
// A prompt's tokens meet three rows and four inputs per pass (dotF16R3x4).

// f16Chunk is how many values the Go forms convert at a time.
const f16Chunk = 256

func unpackF16(r *qrow, row []byte, _ int) { r.raw, r.f = row, nil }

// dotF16Generic is dotF16 through float32 chunks of the row and dot.
func dotF16Generic(w []byte, x []float32) float32 {
	var buf [f16Chunk]float32
	var s float32
	for i := 0; i < len(x); i += f16Chunk {
		n := min(f16Chunk, len(x)-i)
		// The length is the caller's, so the only error, an unknown
		// dtype, cannot happen.
		_ = readers.ToFloat32(buf[:n], w[2*i:2*(i+n)], readers.F16)
		s += dot(buf[:n], x[i:i+n])
	}
	return s
}

// dotF16x4Generic is dotF16x4 through float32 chunks of the row and dot4.
func dotF16x4Generic(w []byte, x0, x1, x2, x3 []float32) (s0, s1, s2, s3 float32) {
	var buf [f16Chunk]float32
	cols := len(w) / 2
	for i := 0; i < cols; i += f16Chunk {
		n := min(f16Chunk, cols-i)
		_ = readers.ToFloat32(buf[:n], w[2*i:2*(i+n)], readers.F16)
		a, b, c, d := dot4(buf[:n], x0[i:i+n], x1[i:i+n], x2[i:i+n], x3[i:i+n])
		s0, s1, s2, s3 = s0+a, s1+b, s2+c, s3+d
	}
	return s0, s1, s2, s3
}

// dotF16R3x4Generic is dotF16R3x4 through dotF16x4Generic, row by row.
func dotF16R3x4Generic(w []byte, stride, cols int, x0, x1, x2, x3 []float32, out *[12]float32) {
	for r := range 3 {
		out[4*r], out[4*r+1], out[4*r+2], out[4*r+3] = dotF16x4Generic(w[r*stride:r*stride+2*cols], x0, x1, x2, x3)
	}
}
