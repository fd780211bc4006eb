//go:build !amd64 || purego

package forward

// i8sums16 sets out[i] to Σ a·b over the 16 values from i·16 on: len(b)
// values, a's groups of 32 levels starting every astride bytes.
func i8sums16(a []byte, astride int, b []int8, out []int32) {
	i8sums16Generic(a, astride, b, out)
}

// dotF32 is Σ a·b in float32 (b at least as long as a).
func dotF32(a, b []float32) float32 { return dotF32Generic(a, b) }

// dotQ8 is Σ over groups of 32 of (Σ a·b)·(wd·xd): a's groups every astride
// bytes, b's contiguous, sums scratch.
func dotQ8(a []byte, astride int, b []int8, wd, xd []float32, sums []int32) float32 {
	return dotQ8Generic(a, astride, b, wd, xd, sums)
}

// dotK sets out[i] to Σ over the sixteen 16s of super-block i of
// scale·(Σ a·b).
func dotK(a, b []int8, scales []int32, out []int32) { dotKGeneric(a, b, scales, out) }

// kAsm is empty: no vector kernels in this build.
type kAsm struct{}

var q4kAsm, q6kAsm kAsm

// dot4 sets out[0:4] to the products of the blocks x with the four
// activations a, a[stride:], a[2·stride:], a[3·stride:].
func (k *kFused) dot4(x, a []byte, stride int, out []float32) { k.dot4Generic(x, a, stride, out) }

// dot8 reports false: no eight-input kernel in this build (dot4 runs).
func (k *kFused) dot8(_, _ []byte, _ int, _ []float32) bool { return false }

// dot1 is the product of the blocks x with the activation a.
func (k *kFused) dot1(x, a []byte) float32 { return k.generic(x, a) }

// gemv sets out[r] to the product of row r of x (len(out) rows of equal
// length, one after the other) with the activation a.
func (k *kFused) gemv(x, a []byte, out []float32) { k.gemvGeneric(x, a, out) }

// dotF32x4 is dotF32 of w with four vectors (each at least as long as w).
func dotF32x4(w, x0, x1, x2, x3 []float32) (float32, float32, float32, float32) {
	return dot4(w, x0, x1, x2, x3)
}

// dotQ8x4 is dotQ8 of one row with four inputs (levels b[i], scales xd[i]).
func dotQ8x4(a []byte, astride int, b [4][]int8, wd []float32, xd [4][]float32, sums []int32) [4]float32 {
	return dotQ8x4Generic(a, astride, b, wd, xd, sums)
}

// dotF16 is Σ w·x in float32, w fp16 (2·len(x) bytes).
func dotF16(w []byte, x []float32) float32 { return dotF16Generic(w, x) }

// dotF16x4 is dotF16 of w with four vectors (each of len(w)/2 values at
// least).
func dotF16x4(w []byte, x0, x1, x2, x3 []float32) (float32, float32, float32, float32) {
	return dotF16x4Generic(w, x0, x1, x2, x3)
}

// dotF16R3x4 sets out[4r+t] to dotF16 of row r of w (three rows of cols
// values, stride bytes apart) with input t (each at least cols long).
func dotF16R3x4(w []byte, stride, cols int, x0, x1, x2, x3 []float32, out *[12]float32) {
	dotF16R3x4Generic(w, stride, cols, x0, x1, x2, x3, out)
}

// axpyF32 sets y[i] += a·x[i] for every i of y (x at least as long).
func axpyF32(y []float32, a float32, x []float32) { axpyF32Generic(y, a, x) }

// q8RawDot1 is the product of the stored Q8_0 blocks x with the Q8_0
// activation (levels b, scales xd).
func q8RawDot1(x []byte, b []int8, xd []float32) float32 { return q8RawDotGeneric(x, b, xd) }

// q8RawRows sets out[r] to q8RawDot1 of row r of x (len(out) rows of equal
// length, one after the other).
func q8RawRows(x []byte, b []int8, xd []float32, out []float32) { q8RawRowsGeneric(x, b, xd, out) }

// q8Unsigned is false: no kernel here takes Q8_0 levels + 128.
const q8Unsigned = false

// q8RawDot4 is q8RawDot1 of x with four activations (bu unused here).
func q8RawDot4(x []byte, b [4][]int8, _ [4][]uint8, xd [4][]float32) (s [4]float32) {
	for i := range s {
		s[i] = q8RawDotGeneric(x, b[i], xd[i])
	}
	return s
}

// q8RawRows8 reports false: no eight-input kernel in this build.
func q8RawRows8(_ []byte, _ [8][]uint8, _ []float32, _ []float32) bool { return false }
