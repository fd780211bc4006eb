//go:build !amd64 || purego

package quantize

// encodeRowQ1_0 is quantize_row_q1_0_ref.
func encodeRowQ1_0(dst []byte, src []float32, _ []float32) { encodeRowQ1_0Generic(dst, src, nil) }

// encodeRowQ2_0 is quantize_row_q2_0_ref.
func encodeRowQ2_0(dst []byte, src []float32, _ []float32) { encodeRowQ2_0Generic(dst, src, nil) }
