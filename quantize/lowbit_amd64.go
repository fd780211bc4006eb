//go:build !purego

package quantize

// The amd64 kernels of Q1_0 and Q2_0 (lowbit_amd64.s); the purego build tag turns it
// off, and TestEncodeAsmMatchesGeneric checks them against the Go forms.

//go:noescape
func q1_0x8AVX2(dst *byte, src *float32, n8 int)

// encodeRowQ1_0 is quantize_row_q1_0_ref: runs of eight blocks in the
// lanes of the kernel, the blocks after them in Go.
func encodeRowQ1_0(dst []byte, src []float32, _ []float32) {
	nb := len(src) / qk1_0
	n := nb / 8 * 8
	if !useAVX2 || n == 0 {
		encodeRowQ1_0Generic(dst, src, nil)
		return
	}
	dst, src = dst[:nb*q1_0Bytes], src[:nb*qk1_0]
	q1_0x8AVX2(&dst[0], &src[0], n/8)
	encodeRowQ1_0Generic(dst[n*q1_0Bytes:], src[n*qk1_0:], nil)
}

//go:noescape
func q2_0AVX2(dst *byte, src *float32, nblocks int) int

// encodeRowQ2_0 is quantize_row_q2_0_ref. The kernel leaves the blocks
// whose largest magnitude is zero or tiny to the Go form.
func encodeRowQ2_0(dst []byte, src []float32, _ []float32) {
	nb := len(src) / qk2_0
	if !useAVX2 {
		encodeRowQ2_0Generic(dst, src, nil)
		return
	}
	dst = dst[:nb*q2_0Bytes]
	for i := 0; i < nb; i++ {
		i += q2_0AVX2(&dst[i*q2_0Bytes], &src[i*qk2_0], nb-i)
		if i < nb {
			encodeRowQ2_0Generic(dst[i*q2_0Bytes:(i+1)*q2_0Bytes], src[i*qk2_0:(i+1)*qk2_0], nil)
		}
	}
}
