package quantize

import (
	"encoding/binary"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// IQ1_S and IQ1_M: 1.5625 and 1.75 bits per weight. Groups of eight values
// are points of a 2048-point grid with coordinates −1, 0, 1 shifted by
// ±IQ1S_DELTA, ported from quantize_row_iq1_s_impl,
// quantize_row_iq1_m_impl, iq1_find_best_neighbour2, iq1_sort_helper and
// dequantize_row_iq1_s / dequantize_row_iq1_m (ggml/src/ggml-quants.c).
// IQ1_S needs importance weights (ggml asserts them). IQ1_M uses them when
// given and weights by x² otherwise: ggml's assert on them is commented out
// and quantize_row_iq1_m_impl has that NULL branch.
//
// Sorting: both encoders sort a group's values with qsort and
// iq1_sort_helper, which compares the values only, so the order of equal
// values (and of −0 and +0) is qsort's. The reference ggml runs on glibc
// 2.36, whose qsort is a merge sort (msort.c, with a stack buffer for these
// 32 or 16 eight-byte elements) that keeps equal elements in input order:
// a stable sort. iq1SortOrder is therefore a stable sort; the golden
// vectors depend on it (rows with repeated values differ under any other
// tie order).
//
// Where ggml aborts or misbehaves: when every neighbour's weighted distance
// is NaN or at least FLT_MAX, iq1_find_best_neighbour2 scans the whole grid
// but reads xval[i] with the grid index i (past the group, undefined
// behaviour), then asserts grid_index >= 0; GGML_ASSERT(scale >= 0) fails
// on a NaN scale. Finite input gets there only through float overflow
// (|x| around 1e13 and beyond, or huge importance weights), where the block
// scale overflows fp16 anyway. This port takes the first listed (nearest)
// neighbour instead and carries a NaN scale through, so it cannot panic.

func init() {
	register(gguf.IQ1_S, &codec{encodeRow: encodeIQ1SRow, decodeRow: decodeIQ1SRow, needsImatrix: true, usesImatrix: true})
	register(gguf.IQ1_M, &codec{encodeRow: encodeIQ1MRow, decodeRow: decodeIQ1MRow, usesImatrix: true})
}

const (
	iq1sBlockBytes = 50    // block_iq1_s: d, qs[32] grid low bytes, qh[8] uint16 (3×3 grid high bits, 3-bit scale, shift sign)
	iq1mBlockBytes = 56    // block_iq1_m: qs[32], qh[16] (2×3 grid high bits + shift sign bits), scales[8] (3-bit scales, fp16 d in top nibbles)
	iq1Delta       = 0.125 // IQ1S_DELTA = IQ1M_DELTA (ggml-common.h)
)

// The two shifted value sets: x_p = {−1+Δ, Δ, 1+Δ} and x_m = {−1−Δ, −Δ,
// 1−Δ}, all exact in float.
var (
	iq1XP = [3]float32{-1 + iq1Delta, iq1Delta, 1 + iq1Delta}
	iq1XM = [3]float32{-1 - iq1Delta, -iq1Delta, 1 - iq1Delta}
)

// iq1SortOrder stores in idx the positions of xb in ascending order of
// value, equal values in position order: glibc 2.36's qsort with
// iq1_sort_helper (see the file comment). An insertion sort, for 16 or 32
// values.
func iq1SortOrder(idx []uint8, xb []float32) {
	for j := range idx {
		v, x := uint8(j), xb[j]
		i := j
		for ; i > 0 && xb[idx[i-1]] > x; i-- {
			idx[i] = idx[i-1]
		}
		idx[i] = v
	}
}

// bestNeighbour2 is iq1_find_best_neighbour2: among the neighbours of the
// off-grid point whose index entry is m, the grid point whose values xx[l]
// at scale are closest to xval by squared error weighted by w (ties keep
// the earlier entry); L gets its levels and the index is returned. When no
// distance is below FLT_MAX the first listed neighbour is taken (see the
// file comment).
func (g *iq2Grid) bestNeighbour2(m int32, xval, w []float32, scale float32, xx *[3]float32, L []uint8) int {
	gi := g.nearest(m, (*[8]float32)(xval[:8]), (*[8]float32)(w[:8]), xx, scale)
	copy(L[:8], g.levels[gi][:])
	return gi
}

// iq1Snap looks up the group of eight levels L[8k:8k+8] on the grid; an
// off-grid group becomes its best neighbour for the values xx at scale.
// It returns the grid index and whether the group was on the grid.
func (g *iq2Grid) iq1Snap(L []uint8, xb, weight []float32, scale float32, xx *[3]float32) (int, bool) {
	u := 0
	for i, l := range L[:8] {
		u |= int(l) << (2 * i)
	}
	m := g.index[u]
	if m >= 0 {
		return int(m), true
	}
	return g.bestNeighbour2(m, xb, weight, scale, xx, L), false
}

// iq1Assign sets the levels of the sorted positions: 0 below i1, 1 from
// i1 to i2, 2 from i2 on; with a negative scale it mirrors them (2−l) and
// makes the scale positive.
func iq1Assign(L, idx []uint8, i1, i2 int, scale float32) float32 {
	for j, i := range idx {
		switch {
		case j < i1:
			L[i] = 0
		case j < i2:
			L[i] = 1
		default:
			L[i] = 2
		}
	}
	if scale < 0 {
		for j := range L {
			L[j] = 2 - L[j]
		}
		scale = -scale
	}
	return scale
}

func encodeIQ1SRow(dst []byte, src, imatrix []float32) {
	g := iq1Tables()
	for ibl := range len(src) / 256 {
		encodeIQ1SBlock(g, dst[iq1sBlockBytes*ibl:iq1sBlockBytes*(ibl+1)], src[256*ibl:256*ibl+256], imatrix[256*ibl:256*ibl+256])
	}
}

// encodeIQ1SBlock is one super-block of quantize_row_iq1_s_impl: eight
// groups of 32, each four grid points, a 3-bit scale and the sign of the
// shift Δ. The split of a group into the levels 0, 1, 2 is found exactly
// by trying every pair of boundaries in the sorted values.
func encodeIQ1SBlock(g *iq2Grid, y []byte, xbl, qw []float32) {
	y = y[:iq1sBlockBytes]
	clear(y)
	qs := y[2:34]
	var (
		scales   [8]float32
		shifts   [8]int8
		qh       [8]uint16
		weight   [32]float32
		search   iq1sSearch
		idx      [32]uint8
		L        [32]uint8
		index    [4]int
		maxScale float32
	)
	sigma2 := iq2Sigma2(xbl, 2)
	for ib := range 8 {
		xb := xbl[32*ib : 32*ib+32]
		qwb := qw[32*ib : 32*ib+32]
		for i, x := range xb {
			weight[i] = qwb[i] * float32(math.Sqrt(float64(sigma2+float32(x*x))))
		}
		max := abs32(xb[0])
		for _, x := range xb[1:] {
			max = iq2FMax(max, abs32(x))
		}
		if max < groupMaxEpsIQ1S {
			scales[ib], shifts[ib] = 0, 1
			continue
		}
		iq1SortOrder32(&idx, xb)
		sumx, sumw := &search.tab[0], &search.tab[1]
		for j, i := range idx {
			sumx[j+1] = sumx[j] + float32(weight[i]*xb[i])
			sumw[j+1] = sumw[j] + weight[i]
		}
		search.run(max)
		besti1, besti2, bestShift, scale := search.besti1, search.besti2, search.bestShift, search.scale
		if besti1 < 0 || besti2 < 0 || bestShift == 0 {
			scales[ib], shifts[ib] = 0, 1
			continue
		}
		if scale < 0 {
			bestShift = -bestShift
		}
		scale = iq1Assign(L[:], idx[:], besti1, besti2, scale)
		xx := &iq1XP
		if bestShift != 1 {
			xx = &iq1XM
		}
		allOnGrid := true
		for k := range 4 {
			gi, on := g.iq1Snap(L[8*k:], xb[8*k:], weight[8*k:], scale, xx)
			index[k] = gi
			allOnGrid = allOnGrid && on
		}
		if !allOnGrid {
			var sumqx, sumq2 float32
			for k := range 4 {
				for j, l := range g.levels[index[k]] {
					w, q := weight[8*k+j], xx[l]
					sumqx += float32(float32(w*q) * xb[8*k+j])
					sumq2 += float32(float32(w*q) * q)
				}
			}
			if sumqx > 0 && sumq2 > 0 {
				scale = sumqx / sumq2
			}
		}
		var h uint16
		for k, gi := range index {
			qs[4*ib+k] = uint8(gi)
			h |= uint16(gi>>8) << (3 * k)
		}
		qh[ib] = h
		scales[ib], shifts[ib] = scale, int8(bestShift)
		maxScale = iq2FMax(maxScale, scale)
	}

	if maxScale != 0 {
		d := maxScale / 15
		binary.LittleEndian.PutUint16(y, FP32ToFP16(float32(d*1.125))) // ggml's fudge factor
		id := 1 / d
		for ib, sc := range scales {
			l := uint16(max(0, min(7, nearestInt(float32(0.5*float32(float32(id*sc)-1))))))
			if shifts[ib] == -1 {
				l |= 8
			}
			qh[ib] |= l << 12
		}
	}
	for ib, h := range qh {
		binary.LittleEndian.PutUint16(y[34+2*ib:], h)
	}
}

// iq1sSearch is the split search of quantize_row_iq1_s_impl for one group
// of 32: every pair of boundaries i1 ≤ i2 and both shifts (+1, then −1),
// in ggml's order, the first best score winning. ggml's sums,
// (S[i1]−S[0])·v0 + (S[i2]−S[i1])·v1 + (S[32]−S[i2])·v2 for S = sumx and,
// with v², sumw, are rebuilt from the same rounded products, with the
// products that do not depend on i2 taken out of the loop over i2.
type iq1sSearch struct {
	// tab holds the prefix sums sumx and sumw of the sorted values for
	// i = 0..32, zero after (the kernel reads eight lanes from any i2 ≤ 32).
	tab [2][48]float32
	// c holds the constants of one i1 for the loop over i2 (iq1sC*).
	c [16]float32

	besti1, besti2, bestShift int     // −1, −1, 0 when no candidate has Σq² > 0 and a positive score
	scale                     float32 // the best candidate's, or the initial one

	iq1sScratch // the kernel's buffer, if any
}

// The entries of iq1sSearch.c.
const (
	iq1sCX1, iq1sCW1   = 0, 1 // sumx[i1], sumw[i1]
	iq1sCX32, iq1sCW32 = 2, 3 // sumx[32], sumw[32]
	iq1sCPX0, iq1sCMX0 = 4, 5 // (sumx[i1]−sumx[0])·v0 for x_p and x_m
	iq1sCPW0, iq1sCMW0 = 6, 7 // (sumw[i1]−sumw[0])·v0·v0 for x_p and x_m
	iq1sCBest          = 8    // the best score so far
	iq1sCV             = 9    // x_p[1], x_p[2], x_m[1], x_m[2] (for the kernel)
)

// setI1 starts the boundary i1.
func (s *iq1sSearch) setI1(i1 int) {
	c, sumx, sumw := &s.c, &s.tab[0], &s.tab[1]
	sx1, sw1 := sumx[i1]-sumx[0], sumw[i1]-sumw[0]
	c[iq1sCX1], c[iq1sCW1] = sumx[i1], sumw[i1]
	c[iq1sCX32], c[iq1sCW32] = sumx[32], sumw[32]
	c[iq1sCPX0], c[iq1sCMX0] = float32(sx1*iq1XP[0]), float32(sx1*iq1XM[0])
	c[iq1sCPW0] = float32(float32(sw1*iq1XP[0]) * iq1XP[0])
	c[iq1sCMW0] = float32(float32(sw1*iq1XM[0]) * iq1XM[0])
}

// runGeneric is the whole search in Go, with init as the scale when no
// candidate is found.
func (s *iq1sSearch) runGeneric(init float32) {
	s.besti1, s.besti2, s.bestShift, s.scale = -1, -1, 0, init
	bestScore := -float32(math.MaxFloat32)
	sumx, sumw := &s.tab[0], &s.tab[1]
	for i1 := 0; i1 <= 32; i1++ {
		s.setI1(i1)
		px0, mx0, pw0, mw0 := s.c[iq1sCPX0], s.c[iq1sCMX0], s.c[iq1sCPW0], s.c[iq1sCMW0]
		for i2 := i1; i2 <= 32; i2++ {
			sx2, sw2 := sumx[i2]-sumx[i1], sumw[i2]-sumw[i1]
			sx3, sw3 := sumx[32]-sumx[i2], sumw[32]-sumw[i2]
			sumqx := px0 + float32(sx2*iq1XP[1]) + float32(sx3*iq1XP[2])
			sumq2 := pw0 + float32(float32(sw2*iq1XP[1])*iq1XP[1]) + float32(float32(sw3*iq1XP[2])*iq1XP[2])
			if sumq2 > 0 && sumqx*sumqx > bestScore*sumq2 {
				s.scale = sumqx / sumq2
				bestScore = s.scale * sumqx
				s.besti1, s.besti2, s.bestShift = i1, i2, 1
			}
			sumqx = mx0 + float32(sx2*iq1XM[1]) + float32(sx3*iq1XM[2])
			sumq2 = mw0 + float32(float32(sw2*iq1XM[1])*iq1XM[1]) + float32(float32(sw3*iq1XM[2])*iq1XM[2])
			if sumq2 > 0 && sumqx*sumqx > bestScore*sumq2 {
				s.scale = sumqx / sumq2
				bestScore = s.scale * sumqx
				s.besti1, s.besti2, s.bestShift = i1, i2, -1
			}
		}
	}
}

// iq1mMasks are the shift-sign bits of IQ1_M's qh byte for the four
// combinations of the two halves' shifts (ggml's masks[4]).
var iq1mMasks = [4]uint8{0x00, 0x80, 0x08, 0x88}

// iq1mShifts returns the value sets of the two halves of an IQ1_M group of
// 16 for the combination k: 0 (+,+), 1 (+,−), 2 (−,+), 3 (−,−).
func iq1mShifts(k int) (first, second *[3]float32) {
	first, second = &iq1XP, &iq1XP
	if k >= 2 {
		first = &iq1XM
	}
	if k%2 != 0 {
		second = &iq1XM
	}
	return first, second
}

// iq1mWeights fills weight for one group of 16: qw[i]·sqrtf(sigma2 + x²)
// with importance weights, x² without.
func iq1mWeights(weight *[16]float32, xb, qw []float32, sigma2 float32) {
	if qw != nil {
		for i, x := range xb[:16] {
			weight[i] = qw[i] * float32(math.Sqrt(float64(sigma2+float32(x*x))))
		}
		return
	}
	for i, x := range xb[:16] {
		weight[i] = x * x
	}
}

func encodeIQ1MRow(dst []byte, src, imatrix []float32) {
	g := iq1Tables()
	for ibl := range len(src) / 256 {
		var qw []float32
		if imatrix != nil {
			qw = imatrix[256*ibl : 256*ibl+256]
		}
		encodeIQ1MBlock(g, dst[iq1mBlockBytes*ibl:iq1mBlockBytes*(ibl+1)], src[256*ibl:256*ibl+256], qw)
	}
}

// encodeIQ1MBlock is one super-block of quantize_row_iq1_m_impl: sixteen
// groups of 16, each two grid points whose halves have their own shift
// sign, a 3-bit scale per group, and the fp16 super-block scale spread
// over the top nibbles of the scales. The split search keeps prefix sums
// per half, since each half can take its own shift.
func encodeIQ1MBlock(g *iq2Grid, y []byte, xbl, qw []float32) {
	y = y[:iq1mBlockBytes]
	clear(y)
	qs, qh := y[0:32], y[32:48]
	var (
		scales   [16]float32
		shifts   [16]int8
		weights  [16][16]float32 // per group, kept for the refit of d
		idx      [16]uint8
		L        [16]uint8
		index    [2]int
		search   iq1mSearch
		maxScale float32
	)
	sigma2 := iq2Sigma2(xbl, 2)
	p2, m2 := iq1XP[2], iq1XM[2] // ggml's p2 = x_p[2], m2 = x_m[2]
	for ib := range 16 {
		xb := xbl[16*ib : 16*ib+16]
		var qwb []float32
		if qw != nil {
			qwb = qw[16*ib : 16*ib+16]
		}
		weight := &weights[ib]
		iq1mWeights(weight, xb, qwb, sigma2)
		max := abs32(xb[0])
		for _, x := range xb[1:] {
			max = iq2FMax(max, abs32(x))
		}
		if max < groupMaxEpsIQ1M {
			scales[ib], shifts[ib] = 0, 0
			continue
		}
		iq1SortOrder16(&idx, xb)
		px, pw := search.tab[0:2], search.tab[2:4]
		for j, i := range idx {
			h := 0
			if i >= 8 {
				h = 1
			}
			px[h][j+1] = px[h][j] + float32(weight[i]*xb[i])
			px[1-h][j+1] = px[1-h][j]
			pw[h][j+1] = pw[h][j] + weight[i]
			pw[1-h][j+1] = pw[1-h][j]
		}
		for h := range 2 {
			search.txp[h] = float32(px[h][16] * p2)
			search.txm[h] = float32(px[h][16] * m2)
			search.twp[h] = float32(float32(pw[h][16]*p2) * p2)
			search.twm[h] = float32(float32(pw[h][16]*m2) * m2)
		}
		search.run(max)
		besti1, besti2, bestK, scale := search.besti1, search.besti2, search.bestK, search.scale
		if besti1 < 0 || besti2 < 0 || bestK < 0 {
			scales[ib], shifts[ib] = 0, 0
			continue
		}
		if scale < 0 {
			bestK = 3 - bestK // both halves' shifts change sign
		}
		scale = iq1Assign(L[:], idx[:], besti1, besti2, scale)
		xx0, xx1 := iq1mShifts(bestK)
		allOnGrid := true
		for k, xx := range [2]*[3]float32{xx0, xx1} {
			gi, on := g.iq1Snap(L[8*k:], xb[8*k:], weight[8*k:], scale, xx)
			index[k] = gi
			allOnGrid = allOnGrid && on
		}
		if !allOnGrid {
			var sqx, sq2 float32
			for k, xx := range [2]*[3]float32{xx0, xx1} {
				for j, l := range g.levels[index[k]] {
					w, q := weight[8*k+j], xx[l]
					sqx += float32(float32(w*q) * xb[8*k+j])
					sq2 += float32(float32(w*q) * q)
				}
			}
			if sqx > 0 && sq2 > 0 {
				scale = sqx / sq2
			}
		}
		qs[2*ib] = uint8(index[0])
		qs[2*ib+1] = uint8(index[1])
		qh[ib] = uint8(index[0]>>8) | uint8(index[1]>>8)<<4
		scales[ib], shifts[ib] = scale, int8(bestK)
		maxScale = iq2FMax(maxScale, scale)
	}

	if maxScale == 0 {
		return
	}
	// The 3-bit scales go in 4 little-endian uint16, 12 bits each; then d
	// is refitted over the whole super-block with those scales.
	var sc [4]uint16
	d := maxScale / 15
	id := 1 / d
	var sumqx, sumq2 float32
	for ib := range 16 {
		l := max(0, min(7, nearestInt(float32(0.5*float32(float32(id*scales[ib])-1)))))
		sc[ib/4] |= uint16(l) << (3 * (ib % 4))
		qh[ib] |= iq1mMasks[shifts[ib]]
		xb, weight := xbl[16*ib:16*ib+16], &weights[ib]
		xx0, xx1 := iq1mShifts(int(shifts[ib]))
		for k, xx := range [2]*[3]float32{xx0, xx1} {
			gi := int(qs[2*ib+k]) | int(qh[ib])<<(8-4*k)&0x700
			for j, lv := range g.levels[gi] {
				w, q := weight[8*k+j], float32(xx[lv]*float32(2*l+1))
				sumqx += float32(float32(w*q) * xb[8*k+j])
				sumq2 += float32(float32(w*q) * q)
			}
		}
	}
	if sumq2 > 0 {
		d = sumqx / sumq2
	}
	s := FP32ToFP16(float32(d * 1.1125)) // ggml's fudge factor
	sc[0] |= (s & 0x000f) << 12
	sc[1] |= (s & 0x00f0) << 8
	sc[2] |= (s & 0x0f00) << 4
	sc[3] |= s & 0xf000
	for i, v := range sc {
		binary.LittleEndian.PutUint16(y[48+2*i:], v)
	}
}

// iq1mSearch is the split search of quantize_row_iq1_m_impl for one group
// of 16: every pair of boundaries i1 ≤ i2 and every combination k of the
// halves' shifts — 0 (+,+), 1 (+,−), 2 (−,+), 3 (−,−) — in ggml's order
// (i1, i2, k), the first best score winning. Per half h, Σqx = T·v2 −
// (px[i1] + px[i2]) and Σq² = W·v2² + pw[i1]·c1 + pw[i2]·c2, as ggml
// computes them, with the products that depend on i1 only taken out of the
// loop over i2.
type iq1mSearch struct {
	// tab holds the prefix sums px[0], px[1], pw[0], pw[1] of the sorted
	// values per half for i = 0..16, zero after (the kernel reads eight
	// lanes from any i2 ≤ 16).
	tab [4][24]float32
	// txp, txm, twp, twm are T·v2 and W·v2² per half for the shifts + and −.
	txp, txm, twp, twm [2]float32
	// c holds the constants of one i1 for the loop over i2 (iq1mC*).
	c [16]float32

	besti1, besti2, bestK int     // −1 when no candidate has Σq² > 0 and a positive score
	scale                 float32 // the best candidate's, or the initial one

	iq1mScratch // the kernel's buffer, if any
}

// The entries of iq1mSearch.c.
const (
	iq1mCX0, iq1mCX1     = 0, 1   // px[h][i1]
	iq1mCTXP0, iq1mCTXP1 = 2, 3   // txp[h]
	iq1mCTXM0, iq1mCTXM1 = 4, 5   // txm[h]
	iq1mCA1P0, iq1mCA1P1 = 6, 7   // twp[h] + pw[h][i1]·cp1
	iq1mCA1M0, iq1mCA1M1 = 8, 9   // twm[h] + pw[h][i1]·cm1
	iq1mCCP2, iq1mCCM2   = 10, 11 // cp2, cm2
	iq1mCBest            = 12     // the best score so far
)

// start resets the best candidate, with init as the scale when none is
// found.
func (s *iq1mSearch) start(init float32) {
	s.besti1, s.besti2, s.bestK, s.scale = -1, -1, -1, init
	s.c[iq1mCBest] = -float32(math.MaxFloat32)
}

// setI1 fills c for the boundary i1. ggml's cp1 = x_p[0]²−x_p[1]², cp2 =
// x_p[1]²−x_p[2]², and cm1, cm2 the same for x_m (all exact).
func (s *iq1mSearch) setI1(i1 int) {
	cp1 := float32(iq1XP[0]*iq1XP[0]) - float32(iq1XP[1]*iq1XP[1])
	cp2 := float32(iq1XP[1]*iq1XP[1]) - float32(iq1XP[2]*iq1XP[2])
	cm1 := float32(iq1XM[0]*iq1XM[0]) - float32(iq1XM[1]*iq1XM[1])
	cm2 := float32(iq1XM[1]*iq1XM[1]) - float32(iq1XM[2]*iq1XM[2])
	c := &s.c
	c[iq1mCX0], c[iq1mCX1] = s.tab[0][i1], s.tab[1][i1]
	c[iq1mCTXP0], c[iq1mCTXP1] = s.txp[0], s.txp[1]
	c[iq1mCTXM0], c[iq1mCTXM1] = s.txm[0], s.txm[1]
	c[iq1mCA1P0] = s.twp[0] + float32(s.tab[2][i1]*cp1)
	c[iq1mCA1P1] = s.twp[1] + float32(s.tab[3][i1]*cp1)
	c[iq1mCA1M0] = s.twm[0] + float32(s.tab[2][i1]*cm1)
	c[iq1mCA1M1] = s.twm[1] + float32(s.tab[3][i1]*cm1)
	c[iq1mCCP2], c[iq1mCCM2] = cp2, cm2
}

// scan tries the boundaries i2 = from..to (inclusive) after setI1(i1), in
// ggml's order.
func (s *iq1mSearch) scan(i1, from, to int) {
	c := &s.c
	px0, px1, pw0, pw1 := &s.tab[0], &s.tab[1], &s.tab[2], &s.tab[3]
	x10, x11 := c[iq1mCX0], c[iq1mCX1]
	txp0, txp1, txm0, txm1 := c[iq1mCTXP0], c[iq1mCTXP1], c[iq1mCTXM0], c[iq1mCTXM1]
	a1p0, a1p1, a1m0, a1m1 := c[iq1mCA1P0], c[iq1mCA1P1], c[iq1mCA1M0], c[iq1mCA1M1]
	cp2, cm2 := c[iq1mCCP2], c[iq1mCCM2]
	bestScore := c[iq1mCBest]
	for i2 := from; i2 <= to; i2++ {
		sx0, sx1 := x10+px0[i2], x11+px1[i2]
		qxp0, qxp1 := txp0-sx0, txp1-sx1
		qxm0, qxm1 := txm0-sx0, txm1-sx1
		w0, w1 := pw0[i2], pw1[i2]
		q2p0, q2p1 := a1p0+float32(w0*cp2), a1p1+float32(w1*cp2)
		q2m0, q2m1 := a1m0+float32(w0*cm2), a1m1+float32(w1*cm2)
		// The four combinations k, unrolled.
		if sqx, sq2 := qxp0+qxp1, q2p0+q2p1; sq2 > 0 && sqx*sqx > bestScore*sq2 {
			s.scale = sqx / sq2
			bestScore = s.scale * sqx
			s.besti1, s.besti2, s.bestK = i1, i2, 0
		}
		if sqx, sq2 := qxp0+qxm1, q2p0+q2m1; sq2 > 0 && sqx*sqx > bestScore*sq2 {
			s.scale = sqx / sq2
			bestScore = s.scale * sqx
			s.besti1, s.besti2, s.bestK = i1, i2, 1
		}
		if sqx, sq2 := qxm0+qxp1, q2m0+q2p1; sq2 > 0 && sqx*sqx > bestScore*sq2 {
			s.scale = sqx / sq2
			bestScore = s.scale * sqx
			s.besti1, s.besti2, s.bestK = i1, i2, 2
		}
		if sqx, sq2 := qxm0+qxm1, q2m0+q2m1; sq2 > 0 && sqx*sqx > bestScore*sq2 {
			s.scale = sqx / sq2
			bestScore = s.scale * sqx
			s.besti1, s.besti2, s.bestK = i1, i2, 3
		}
	}
	c[iq1mCBest] = bestScore
}

// runGeneric is the whole search in Go, with init as the scale when no
// candidate is found.
func (s *iq1mSearch) runGeneric(init float32) {
	s.start(init)
	for i1 := 0; i1 <= 16; i1++ {
		s.setI1(i1)
		s.scan(i1, i1, 16)
	}
}

// decodeIQ1SRow is dequantize_row_iq1_s.
func decodeIQ1SRow(dst []float32, src []byte) {
	for ibl := range len(src) / iq1sBlockBytes {
		x := src[iq1sBlockBytes*ibl : iq1sBlockBytes*(ibl+1)]
		d := FP16ToFP32(binary.LittleEndian.Uint16(x))
		qs := x[2:34]
		y := dst[256*ibl : 256*ibl+256]
		for ib := range 8 {
			qh := binary.LittleEndian.Uint16(x[34+2*ib:])
			dl := d * float32(2*(qh>>12&7)+1)
			delta := float32(iq1Delta)
			if qh&0x8000 != 0 {
				delta = -iq1Delta
			}
			for l := range 4 {
				grid := &iq1sDecodeGrid[int(qs[4*ib+l])|int(qh>>(3*l)&7)<<8]
				iq1DecodeGroup(y[32*ib+8*l:], grid, dl, delta)
			}
		}
	}
}

// iq1DecodeGroup writes the eight values dl·(grid[j] + delta).
func iq1DecodeGroup(y []float32, grid *[8]int8, dl, delta float32) {
	y = y[:8]
	for j, v := range grid {
		y[j] = dl * (float32(v) + delta)
	}
}

// decodeIQ1MRow is dequantize_row_iq1_m.
func decodeIQ1MRow(dst []float32, src []byte) {
	for ibl := range len(src) / iq1mBlockBytes {
		x := src[iq1mBlockBytes*ibl : iq1mBlockBytes*(ibl+1)]
		qs, qh := x[0:32], x[32:48]
		var sc [4]uint16
		for i := range sc {
			sc[i] = binary.LittleEndian.Uint16(x[48+2*i:])
		}
		d := FP16ToFP32(sc[0]>>12 | sc[1]>>8&0x00f0 | sc[2]>>4&0x0f00 | sc[3]&0xf000)
		y := dst[256*ibl : 256*ibl+256]
		for ib := range 8 {
			s := sc[ib/2] >> (6 * (ib % 2))
			dl := [2]float32{d * float32(2*(s&7)+1), d * float32(2*(s>>3&7)+1)}
			for l := range 4 {
				h := qh[2*ib+l/2] >> (4 * (l % 2)) // this group's nibble: 3 index bits, shift sign
				delta := float32(iq1Delta)
				if h&0x08 != 0 {
					delta = -iq1Delta
				}
				grid := &iq1sDecodeGrid[int(qs[4*ib+l])|int(h&7)<<8]
				iq1DecodeGroup(y[32*ib+8*l:], grid, dl[l/2], delta)
			}
		}
	}
}
