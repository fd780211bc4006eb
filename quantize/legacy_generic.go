//go:build !amd64 || purego

package quantize

// encodeQ4_0Ref is quantize_row_q4_0_ref. It stops, returning false, at the
// first block holding a NaN or an infinity (its block maximum shows it).
func encodeQ4_0Ref(dst []byte, src []float32) bool { return encodeQ4_0RefGeneric(dst, src) }

// encodeQ4_1Ref is quantize_row_q4_1_ref. It stops, returning false, at the
// first block holding a NaN or an infinity.
func encodeQ4_1Ref(dst []byte, src []float32) bool { return encodeQ4_1RefGeneric(dst, src) }

// encodeQ5_0Ref is quantize_row_q5_0_ref. It stops, returning false, at the
// first block holding a NaN or an infinity (its block maximum shows it).
func encodeQ5_0Ref(dst []byte, src []float32) bool { return encodeQ5_0RefGeneric(dst, src) }

// encodeQ5_1Ref is quantize_row_q5_1_ref. It stops, returning false, at the
// first block holding a NaN or an infinity.
func encodeQ5_1Ref(dst []byte, src []float32) bool { return encodeQ5_1RefGeneric(dst, src) }
