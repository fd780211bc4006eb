//go:build !amd64 || purego

package quantize

// encodeRowMXFP4 is quantize_row_mxfp4_ref.
func encodeRowMXFP4(dst []byte, src []float32, _ []float32) { encodeRowMXFP4Generic(dst, src, nil) }

// fp4Codes16 reports false: without the amd64 kernel NVFP4 codes each
// value with fp4Grid.bestIndex.
func fp4Codes16(qs []byte, x []float32, mid *[7]uint32) bool { return false }
