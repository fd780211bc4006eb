//go:build !amd64 || purego

package forward

// i8sums16 sets out[i] to Σ a·b over the 16 values from i·16 on: len(b)
// values, a's groups of 32 levels starting every astride bytes.
func i8sums16(a []byte, astride int, b []int8, out []int32) {
	i8sums16Generic(a, astride, b, out)
}

// dotF32 is Σ a·b in float32 (b at least as long as a).
func dotF32(a, b []float32) float32 { return dotF32Generic(a, b) }
