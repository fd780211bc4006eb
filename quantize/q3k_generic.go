//go:build !amd64 || purego

package quantize

// q3Pack requantizes the 256 values x against the sub-block scales d (a
// group whose d is 0 keeps its levels in L) and stores Q3_K's hmask and qs.
func q3Pack(y *[q3KBytes]byte, x *[qkK]float32, d *[16]float32, L *[qkK]int8) {
	q3PackGeneric(y, x, d, L)
}
