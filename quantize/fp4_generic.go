//go:build !amd64 || purego

package quantize

// encodeRowMXFP4 is quantize_row_mxfp4_ref.
func encodeRowMXFP4(dst []byte, src []float32, _ []float32) { encodeRowMXFP4Generic(dst, src, nil) }
