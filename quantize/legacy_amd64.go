//go:build !purego

package quantize

// The amd64 kernels of Q4_0, Q4_1, Q5_0 and Q5_1 without weights
// (legacy_amd64.s);
// the purego build tag turns them off, and TestEncodeAsmMatchesGeneric and
// TestEncodeFiniteDifferential check them against the Go forms.

//go:noescape
func q4_0RefAVX2(dst *byte, src *float32, nblocks int) int

//go:noescape
func q4_1RefAVX2(dst *byte, src *float32, nblocks int) int

//go:noescape
func q5_0RefAVX2(dst *byte, src *float32, nblocks int) int

//go:noescape
func q5_1RefAVX2(dst *byte, src *float32, nblocks int) int

// encodeQ4_0Ref is quantize_row_q4_0_ref. It stops, returning false, at the
// first block holding a NaN or an infinity (its block maximum shows it).
func encodeQ4_0Ref(dst []byte, src []float32) bool {
	nb := len(src) / qkLegacy
	if !useAVX2 || nb == 0 {
		return encodeQ4_0RefGeneric(dst, src)
	}
	dst = dst[:nb*18]
	return q4_0RefAVX2(&dst[0], &src[0], nb) == nb
}

// encodeQ4_1Ref is quantize_row_q4_1_ref. It stops, returning false, at the
// first block holding a NaN or an infinity.
func encodeQ4_1Ref(dst []byte, src []float32) bool {
	nb := len(src) / qkLegacy
	if !useAVX2 || nb == 0 {
		return encodeQ4_1RefGeneric(dst, src)
	}
	dst = dst[:nb*20]
	return q4_1RefAVX2(&dst[0], &src[0], nb) == nb
}

// encodeQ5_0Ref is quantize_row_q5_0_ref. It stops, returning false, at the
// first block holding a NaN or an infinity (its block maximum shows it).
func encodeQ5_0Ref(dst []byte, src []float32) bool {
	nb := len(src) / qkLegacy
	if !useAVX2 || nb == 0 {
		return encodeQ5_0RefGeneric(dst, src)
	}
	dst = dst[:nb*22]
	return q5_0RefAVX2(&dst[0], &src[0], nb) == nb
}

// encodeQ5_1Ref is quantize_row_q5_1_ref. It stops, returning false, at the
// first block holding a NaN or an infinity.
func encodeQ5_1Ref(dst []byte, src []float32) bool {
	nb := len(src) / qkLegacy
	if !useAVX2 || nb == 0 {
		return encodeQ5_1RefGeneric(dst, src)
	}
	dst = dst[:nb*24]
	return q5_1RefAVX2(&dst[0], &src[0], nb) == nb
}
