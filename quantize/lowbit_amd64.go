//go:build !purego

package quantize

// The amd64 kernel of Q1_0 (lowbit_amd64.s); the purego build tag turns it
// off, and TestEncodeAsmMatchesGeneric checks it against the Go form.

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
