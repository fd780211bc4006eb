//go:build !purego

package quantize

// The amd64 kernel of Q3_K's requantization and packing (q3k_amd64.s); the
// purego build tag turns it off, and TestEncodeAsmMatchesGeneric checks it
// against the Go form.

//go:noescape
func q3PackAVX2(y *byte, x *float32, d *[16]float32, L *[qkK]int8) bool

// q3Pack requantizes the 256 values x against the sub-block scales d (a
// group whose d is 0 keeps its levels in L) and stores Q3_K's hmask and qs.
func q3Pack(y *[q3KBytes]byte, x *[qkK]float32, d *[16]float32, L *[qkK]int8) {
	if !useAVX2 || !q3PackAVX2(&y[0], &x[0], d, L) {
		q3PackGeneric(y, x, d, L)
	}
}
