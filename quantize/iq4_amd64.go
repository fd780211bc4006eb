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

// iq4Tab holds iq4Index's binary search as vectors. With s1, s2, s3 the
// results (0 or 1) of its first three steps, the index found so far is
// h = 8·s1 + 4·s2 + 2·s3, and the kernels keep j = 2·s1 + s2 + 4·s3, which
// puts the first two steps in the two bits an in-lane VPERMILPS reads.
// step1 and step2 hold in every lane the bound of entry 8, and those of
// entries 4 and 12 (the second step's, chosen by s1); the other tables are
// indexed by j: the third step's bound (entry 8·s1 + 4·s2 + 2), the
// fourth's (entry h+1), the entries h and h+1 of kvaluesIQ4NL, and h.
type iq4Tab struct {
	step1  [8]float32
	step2  [2][8]float32
	step3  [8]float32
	step4  [8]float32
	lo, hi [8]float32
	h      [8]int32
}

var iq4Tables = func() (t iq4Tab) {
	for j := range 8 {
		s1, s2, s3 := j>>1&1, j&1, j>>2&1
		h := 8*s1 + 4*s2 + 2*s3
		t.step1[j] = iq4Bounds[8]
		t.step2[0][j] = iq4Bounds[4]
		t.step2[1][j] = iq4Bounds[12]
		t.step3[j] = iq4Bounds[8*s1+4*s2+2]
		t.step4[j] = iq4Bounds[h+1]
		t.lo[j] = float32(kvaluesIQ4NL[h])
		t.hi[j] = float32(kvaluesIQ4NL[h+1])
		t.h[j] = int32(h)
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
