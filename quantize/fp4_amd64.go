//go:build !purego

package quantize

// The amd64 kernel of MXFP4 (fp4_amd64.s); the purego build tag turns it
// off, and TestEncodeAsmMatchesGeneric checks it against the Go form.

//go:noescape
func mxfp4AVX2(dst *byte, src *float32, nblocks int) int

// encodeRowMXFP4 is quantize_row_mxfp4_ref. The kernel leaves the blocks
// whose largest magnitude is tiny (below 2^-122) or just under a power of
// two (where log2f may round up) to the Go form.
func encodeRowMXFP4(dst []byte, src []float32, _ []float32) {
	nb := len(src) / qkMXFP4
	if !useAVX2 {
		encodeRowMXFP4Generic(dst, src, nil)
		return
	}
	dst = dst[:nb*mxfp4Bytes]
	for i := 0; i < nb; i++ {
		i += mxfp4AVX2(&dst[i*mxfp4Bytes], &src[i*qkMXFP4], nb-i)
		if i < nb {
			encodeRowMXFP4Generic(dst[i*mxfp4Bytes:(i+1)*mxfp4Bytes], src[i*qkMXFP4:(i+1)*qkMXFP4], nil)
		}
	}
}
