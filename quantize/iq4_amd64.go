//go:build !purego

package quantize

// The amd64 kernels of IQ4_NL and IQ4_XS (iq4_amd64.s); the purego build
// tag turns them off, and iq4_amd64_test.go and TestEncodeAsmMatchesGeneric
// check them against the Go forms.

//go:noescape
func iq4TrialsAVX2(x, w *float32, ids *[16]float32, tab *iq4Tab, sums *[32]float32)

//go:noescape
func iq4PackAVX2(qs *byte, x *float32, id float32, tab *iq4Tab)

//go:noescape
func iq4WeightsAVX2(x, qw *float32, sigma2 float32, weight *[32]float32) float32

// iq4Tab holds iq4Index's binary search as vectors: the bounds of entries
// 8, 4 and 12 in every lane (the first step's bound, and the second's,
// chosen by the first step's result), then the tables for VPERMPS,
// indexed by half the index found so far (j), of the bounds the third
// (entries 2, 6, 10, 14 at j = 0, 2, 4, 6) and fourth (entry 2j+1) steps
// compare with, then the entries 2j and 2j+1 of kvaluesIQ4NL.
type iq4Tab [7][8]float32

var iq4Tables = func() (t iq4Tab) {
	for j := range 8 {
		t[0][j] = iq4Bounds[8]
		t[1][j] = iq4Bounds[4]
		t[2][j] = iq4Bounds[12]
		t[3][j] = iq4Bounds[2*(j&6)+2]
		t[4][j] = iq4Bounds[2*j+1]
		t[5][j] = float32(kvaluesIQ4NL[2*j])
		t[6][j] = float32(kvaluesIQ4NL[2*j+1])
	}
	return t
}()

// iq4Trials sets sums[k] and sums[16+k] to iq4Fit(xb, weight, ids[k]).
func iq4Trials(xb []float32, weight *[32]float32, ids *[16]float32, sums *[32]float32) {
	if !useAVX2 {
		iq4TrialsGeneric(xb, weight, ids, sums)
		return
	}
	xb = xb[:32]
	iq4TrialsAVX2(&xb[0], &weight[0], ids, &iq4Tables, sums)
}

// iq4Pack stores the 4-bit index of each of the 32 values xb at inverse
// scale id into qs: value j in the low nibble of qs[j], value j+16 in the
// high nibble.
func iq4Pack(qs []byte, xb []float32, id float32) {
	if !useAVX2 {
		iq4PackGeneric(qs, xb, id)
		return
	}
	qs, xb = qs[:16], xb[:32]
	iq4PackAVX2(&qs[0], &xb[0], id, &iq4Tables)
}

// iq4Weights sets weight to the importance of each of the 32 values xb
// (qw·sqrt(sigma2 + x²), or x² without qw) and returns the first value of
// largest magnitude (0 when all are zeros).
func iq4Weights(xb, qw []float32, sigma2 float32, weight *[32]float32) float32 {
	if !useAVX2 {
		return iq4WeightsGeneric(xb, qw, sigma2, weight)
	}
	xb = xb[:32]
	if qw == nil {
		return iq4WeightsAVX2(&xb[0], nil, sigma2, weight)
	}
	qw = qw[:32]
	return iq4WeightsAVX2(&xb[0], &qw[0], sigma2, weight)
}
