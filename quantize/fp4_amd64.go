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

//go:noescape
func fp4Codes16AVX2(qs *byte, x *float32, mid *[7]uint32)

// fp4Codes16 stores the codes of the 16 values x as NVFP4 packs a
// sub-block (qs[j] = code(x[j]) | code(x[8+j])<<4), given the bits of the
// grid's midpoints, for values all below the grid's lim; it reports
// whether it did (false without AVX2).
func fp4Codes16(qs []byte, x []float32, mid *[7]uint32) bool {
	if !useAVX2 {
		return false
	}
	qs, x = qs[:8], x[:16]
	fp4Codes16AVX2(&qs[0], &x[0], mid)
	return true
}
