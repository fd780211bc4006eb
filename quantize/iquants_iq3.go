package quantize

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/ggufkit/ggufkit/gguf"
)

// IQ3_XXS and IQ3_S: 3-bit "i-quants" whose groups of four magnitudes are
// points of a fixed grid (256 points for IQ3_XXS, 512 for IQ3_S), ported
// from quantize_row_iq3_xxs_impl, quantize_row_iq3_s_impl,
// iq3_find_best_neighbour, dequantize_row_iq3_xxs and dequantize_row_iq3_s
// (ggml/src/ggml-quants.c). Both go through ggml's quantize_chunk path, with
// or without importance weights.
//
// Where ggml aborts: GGML_ASSERT(grid_index >= 0) in iq3_find_best_neighbour
// fails when every candidate's weighted distance is NaN or at least
// FLT_MAX, and GGML_ASSERT(scale >= 0) fails when a sub-block scale is NaN.
// Finite input reaches them only through float overflow: |x| beyond about
// 1e19 (x² overflows), or importance weights so large that every weighted
// distance overflows. With such |x| the block scale overflows fp16 anyway
// and the output fails validation; with such weights it may not. ggml has
// no output for these rows to match. This port does not panic: the
// neighbour search then takes the first listed (nearest) grid point, and a
// NaN scale is carried through as ggml's arithmetic would carry it.

func init() {
	register(gguf.IQ3_XXS, &codec{encodeRow: encodeIQ3XXSRow, decodeRow: decodeIQ3XXSRow, usesImatrix: true})
	register(gguf.IQ3_S, &codec{encodeRow: encodeIQ3SRow, decodeRow: decodeIQ3SRow, usesImatrix: true})
}

const (
	iq3XXSBlockBytes = 98  // block_iq3_xxs: d, qs[64] grid indexes, 8 uint32 scale+signs
	iq3SBlockBytes   = 110 // block_iq3_s: d, qs[64], qh[8], signs[32], scales[4]
	iq3MaxLevel      = 7   // kMaxQ-1: levels 0..7 stand for the odd values 1..15
)

// iq3FMax is C's MAX(a, b) macro, a > b ? a : b, which ggml uses for running
// maxima; unlike Go's max it returns b when either is NaN and keeps b on a
// tie of ±0.
func iq3FMax(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

// iq3KSigns returns ksigns_iq2xs[s] (ggml-common.h) for a 7-bit sign
// pattern s: the table adds an eighth bit that makes the number of set bits
// even, because IQ3_XXS's encoder always flips an even number of signs.
func iq3KSigns(s uint32) uint8 {
	return uint8(s) | uint8(bits.OnesCount32(s)&1)<<7
}

// bestNeighbour is iq3_find_best_neighbour: among the grid neighbours of the
// off-grid quadruple u, the point closest to xval at scale, by squared
// error weighted by w (ties keep the earlier entry). ggml asserts that some
// distance is below FLT_MAX; when none is (overflow or NaN), this returns
// the first listed neighbour, one of the nearest in level space.
func (t *iq3Tables) bestNeighbour(u int, xval, w *[4]float32, scale float32) int {
	off := int(-t.kmap[u]-1) + 1
	list := t.neighbours[off : off+int(t.neighbours[off-1])]
	vals := t.neighbourVals[off : off+len(list)]
	x0, x1, x2, x3 := xval[0], xval[1], xval[2], xval[3]
	w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
	best := float32(math.MaxFloat32)
	pick := -1
	for k := range vals {
		q := &vals[k]
		// ggml sums d2 = 0 + p0 + p1 + p2 + p3 in this order; the leading
		// 0 + p0 only turns -0 into +0, which compares the same.
		diff := float32(scale*q[0]) - x0
		d2 := float32(float32(w0*diff) * diff)
		diff = float32(scale*q[1]) - x1
		d2 += float32(float32(w1*diff) * diff)
		diff = float32(scale*q[2]) - x2
		d2 += float32(float32(w2*diff) * diff)
		diff = float32(scale*q[3]) - x3
		d2 += float32(float32(w3*diff) * diff)
		if d2 < best {
			best, pick = d2, k
		}
	}
	if pick < 0 {
		pick = 0
	}
	return int(list[pick])
}

// quantGroup rounds the four values xval at inverse scale id to the nearest
// levels, then, when that quadruple is not a grid point, replaces it by
// bestNeighbour at scale. It returns the chosen grid point and reports
// whether the rounded quadruple was already on the grid; this is the inner
// step both IQ3 encoders repeat for every group and trial scale.
func (t *iq3Tables) quantGroup(xval, w *[4]float32, id, scale float32) (int32, bool) {
	u := 0
	for i := range 4 {
		l := nearestInt(float32(0.5 * float32(float32(id*xval[i])-1)))
		u |= int(max(0, min(iq3MaxLevel, l))) << (3 * i)
	}
	index := t.kmap[u]
	if index >= 0 {
		return index, true
	}
	return int32(t.bestNeighbour(u, xval, w, scale)), false
}

// quantGroupsGeneric is quantGroup for the eight groups of a sub-block: the
// grid points go to idx, and bit k of the result is set when group k was
// on the grid.
func (t *iq3Tables) quantGroupsGeneric(xval, waux *[32]float32, id, scale float32, idx *[8]int32) uint8 {
	var onGrid uint8
	for k := range 8 {
		index, on := t.quantGroup((*[4]float32)(xval[4*k:]), (*[4]float32)(waux[4*k:]), id, scale)
		idx[k] = index
		if on {
			onGrid |= 1 << k
		}
	}
	return onGrid
}

// sums returns Σ w·x·q and Σ w·q² over a 32-value sub-block whose groups
// of four are the grid points idx, q being the odd values 2l+1, summed in
// ggml's order.
func (t *iq3Tables) sums(weight, xval *[32]float32, idx *[8]int32) (sumqx, sumq2 float32) {
	for k, index := range idx {
		q := &t.vals[index]
		for i := range 4 {
			w := weight[4*k+i]
			sumqx += float32(float32(w*xval[4*k+i]) * q[i])
			sumq2 += float32(float32(w*q[i]) * q[i])
		}
	}
	return sumqx, sumq2
}

// sums4 is sums of four trials' grid points at once: eight independent
// chains of additions, each in ggml's order, instead of two.
func (t *iq3Tables) sums4(weight, xval *[32]float32, idx *[4][8]int32, sumqx, sumq2 *[4]float32) {
	var x0, x1, x2, x3, s0, s1, s2, s3 float32
	for k := range 8 {
		q0, q1, q2, q3 := &t.vals[idx[0][k]], &t.vals[idx[1][k]], &t.vals[idx[2][k]], &t.vals[idx[3][k]]
		for i := range 4 {
			w := weight[4*k+i]
			wx := float32(w * xval[4*k+i])
			x0 += float32(wx * q0[i])
			s0 += float32(float32(w*q0[i]) * q0[i])
			x1 += float32(wx * q1[i])
			s1 += float32(float32(w*q1[i]) * q1[i])
			x2 += float32(wx * q2[i])
			s2 += float32(float32(w*q2[i]) * q2[i])
			x3 += float32(wx * q3[i])
			s3 += float32(float32(w*q3[i]) * q3[i])
		}
	}
	*sumqx = [4]float32{x0, x1, x2, x3}
	*sumq2 = [4]float32{s0, s1, s2, s3}
}

// iq3MaxTrials is the number of trial scales of IQ3_XXS (IQ3_S has 19),
// rounded up to a multiple of four for sums4.
const iq3MaxTrials = 32

// iq3Sub is the per-sub-block state of the IQ3 encoders: the grid point of
// each group of four in idx, and bit k of onGrid set when group k's
// rounded levels were a grid point at the chosen scale; trialIdx and
// trialOnGrid are the same for each trial scale.
type iq3Sub struct {
	weight, waux, xval [32]float32
	idx, idxAux        [8]int32
	onGrid             uint8
	trialIdx           [iq3MaxTrials][8]int32
	trialOnGrid        [iq3MaxTrials]uint8
}

// setWeights fills weight (the importance of each value, ggml's weight[])
// and waux = √weight for the 32 values xb; qw is nil or their importance
// matrix entries, sigma2 twice the mean square of the super-block.
func (s *iq3Sub) setWeights(xb, qw []float32, sigma2 float32) {
	xb = xb[:32]
	if qw != nil {
		qw = qw[:32]
		for i, x := range xb {
			s.weight[i] = float32(qw[i] * float32(math.Sqrt(float64(sigma2+float32(x*x)))))
		}
	} else {
		for i, x := range xb {
			s.weight[i] = float32(x * x)
		}
	}
	for i, w := range s.weight {
		s.waux[i] = float32(math.Sqrt(float64(w)))
	}
}

// search is the scale search shared by both IQ3 encoders: for each trial
// inverse scale (2·kMaxQ-1 + is·0.2)/max, is = -nis..nis, quantize every
// group of four onto the grid and keep the points with the best weighted
// fit sumqx²/sumq2. It returns the scale of the best trial (max/15 when
// none fits), leaving its points in idx and which groups were on the grid
// in onGrid (left as initialised by the caller when no trial fits).
func (s *iq3Sub) search(t *iq3Tables, max float32, nis int) float32 {
	n := 2*nis + 1
	for j := range n {
		id := float32(2*(iq3MaxLevel+1)-1+float32(float32(j-nis)*0.2)) / max
		s.trialOnGrid[j] = t.quantGroups(&s.xval, &s.waux, id, 1/id, &s.trialIdx[j])
	}
	var best float32
	scale := max / (2*(iq3MaxLevel+1) - 1)
	for j0 := 0; j0 < n; j0 += 4 {
		// Trials past n hold grid points of earlier calls: valid indexes
		// whose sums are not used.
		var sumqx, sumq2 [4]float32
		t.sums4(&s.weight, &s.xval, (*[4][8]int32)(s.trialIdx[j0:]), &sumqx, &sumq2)
		for j := j0; j < min(n, j0+4); j++ {
			sqx, sq2 := sumqx[j-j0], sumq2[j-j0]
			if sq2 > 0 && float32(sqx*sqx) > float32(best*sq2) {
				scale = sqx / sq2
				best = float32(scale * sqx)
				s.idx = s.trialIdx[j]
				s.onGrid = s.trialOnGrid[j]
			}
		}
	}
	return scale
}

// refine re-quantizes the groups that were off the grid at the best trial
// (all groups when all is set, as IQ3_S does) with the final scale, and
// returns the least-squares scale of the result. ggml skips it when every
// group was on the grid or the scale is not positive.
func (s *iq3Sub) refine(t *iq3Tables, scale float32, all bool) float32 {
	if s.onGrid == 0xff || !(scale > 0) {
		return scale
	}
	t.quantGroups(&s.xval, &s.waux, 1/scale, scale, &s.idxAux)
	for k := range s.idx {
		if all || s.onGrid>>k&1 == 0 {
			s.idx[k] = s.idxAux[k]
		}
	}
	if sumqx, sumq2 := t.sums(&s.weight, &s.xval, &s.idx); sumq2 > 0 {
		scale = sumqx / sumq2
	}
	return scale
}

// superSigma2 is ggml's sigma2 = 2·Σx²/QK_K of a 256-value super-block.
func superSigma2(xbl []float32) float32 {
	var sumx2 float32
	for _, x := range xbl[:256] {
		sumx2 += float32(x * x)
	}
	return float32(2*sumx2) / 256
}

func encodeIQ3XXSRow(dst []byte, src, imatrix []float32) {
	t := iq3XXSTables()
	var s iq3Sub
	for ibl := range len(src) / 256 {
		var qw []float32
		if imatrix != nil {
			qw = imatrix[256*ibl : 256*ibl+256]
		}
		encodeIQ3XXSBlock(t, &s, dst[iq3XXSBlockBytes*ibl:iq3XXSBlockBytes*(ibl+1)], src[256*ibl:256*ibl+256], qw)
	}
}

// encodeIQ3XXSBlock is one super-block of quantize_row_iq3_xxs_impl
// (grid_size 256).
func encodeIQ3XXSBlock(t *iq3Tables, s *iq3Sub, y []byte, xbl, qw []float32) {
	y = y[:iq3XXSBlockBytes]
	var (
		scales      [8]float32
		grid        [64]uint8
		scalesSigns [8]uint32
		maxScale    float32
		sigma2      = superSigma2(xbl)
		blockSigns  [4]uint8
	)
	for ib := range 8 {
		xb := xbl[32*ib : 32*ib+32]
		var qwb []float32
		if qw != nil {
			qwb = qw[32*ib : 32*ib+32]
		}
		s.setWeights(xb, qwb, sigma2)
		// Signs go in 7 bits per 8 values: the eighth is implied by even
		// parity, so with an odd count the value of least weighted square
		// keeps its sign and enters the fit negated.
		for k := range 4 {
			nflip := 0
			var sgn uint8
			for i := range 8 {
				x := xb[8*k+i]
				if x >= 0 {
					s.xval[8*k+i] = x
				} else {
					s.xval[8*k+i] = -x
					nflip++
					sgn |= 1 << i
				}
			}
			if nflip%2 != 0 {
				imin := 0
				lo := float32(float32(s.weight[8*k]*xb[8*k]) * xb[8*k])
				for i := 1; i < 8; i++ {
					ax := float32(float32(s.weight[8*k+i]*xb[8*k+i]) * xb[8*k+i])
					if ax < lo {
						lo, imin = ax, i
					}
				}
				s.xval[8*k+imin] = -s.xval[8*k+imin]
				sgn ^= 1 << imin
			}
			blockSigns[k] = sgn & 127
		}
		max := s.xval[0]
		for _, v := range s.xval[1:] {
			max = iq3FMax(max, v)
		}
		if max < groupMaxEpsIQ3XXS {
			scales[ib] = 0
			continue
		}
		s.idx = [8]int32{}
		s.onGrid = 0xff
		scale := s.search(t, max, 15)
		scale = s.refine(t, scale, false)
		if scale < 0 {
			// ggml: "should never happen" (only negative importance
			// weights get here); flip the scale and every sign.
			scale = -scale
			for k := range blockSigns {
				blockSigns[k] = ^blockSigns[k] & 127
			}
		}
		for k := range 8 {
			grid[8*ib+k] = uint8(s.idx[k])
		}
		scalesSigns[ib] = uint32(blockSigns[0]) | uint32(blockSigns[1])<<7 | uint32(blockSigns[2])<<14 | uint32(blockSigns[3])<<21
		scales[ib] = scale
		maxScale = iq3FMax(maxScale, scale)
	}

	if maxScale == 0 {
		clear(y)
		return
	}
	d := maxScale / 31
	binary.LittleEndian.PutUint16(y, FP32ToFP16(float32(d*1.0125))) // ggml's fudge factor
	id := 1 / d
	for ib, sc := range scales {
		l := nearestInt(float32(0.5 * float32(float32(id*sc)-1)))
		scalesSigns[ib] |= uint32(max(0, min(15, l))) << 28
	}
	copy(y[2:66], grid[:])
	for ib, v := range scalesSigns {
		binary.LittleEndian.PutUint32(y[66+4*ib:], v)
	}
}

func encodeIQ3SRow(dst []byte, src, imatrix []float32) {
	t := iq3STables()
	var s iq3Sub
	for ibl := range len(src) / 256 {
		var qw []float32
		if imatrix != nil {
			qw = imatrix[256*ibl : 256*ibl+256]
		}
		encodeIQ3SBlock(t, &s, dst[iq3SBlockBytes*ibl:iq3SBlockBytes*(ibl+1)], src[256*ibl:256*ibl+256], qw)
	}
}

// encodeIQ3SBlock is one super-block of quantize_row_iq3_s_impl with
// IQ3S_BLOCK_SIZE 32.
//
// A ggml quirk is kept for bit-exactness: a sub-block whose values are all
// zero is skipped before ggml advances its qs and signs pointers, so the
// following sub-blocks' grid indexes and signs land 8 and 4 bytes earlier
// than their position (qh and scales are indexed by position and are not
// shifted).
func encodeIQ3SBlock(t *iq3Tables, s *iq3Sub, y []byte, xbl, qw []float32) {
	y = y[:iq3SBlockBytes]
	clear(y)
	qs, qh, signs, packed := y[2:66], y[66:74], y[74:106], y[106:110]
	var (
		scales     [8]float32
		maxScale   float32
		sigma2     = superSigma2(xbl)
		blockSigns [4]uint8
	)
	for ib := range 8 {
		xb := xbl[32*ib : 32*ib+32]
		var qwb []float32
		if qw != nil {
			qwb = qw[32*ib : 32*ib+32]
		}
		s.setWeights(xb, qwb, sigma2)
		for k := range 4 {
			var sgn uint8
			for i := range 8 {
				x := xb[8*k+i]
				if x >= 0 {
					s.xval[8*k+i] = x
				} else {
					s.xval[8*k+i] = -x
					sgn |= 1 << i
				}
			}
			blockSigns[k] = sgn
		}
		max := s.xval[0]
		for _, v := range s.xval[1:] {
			max = iq3FMax(max, v)
		}
		if max == 0 {
			scales[ib] = 0
			continue
		}
		s.idx = [8]int32{}
		s.onGrid = 0
		scale := s.search(t, max, 9)
		scale = s.refine(t, scale, true)
		if scale < 0 {
			scale = -scale
			for k := range blockSigns {
				blockSigns[k] = ^blockSigns[k]
			}
		}
		for k := range 8 {
			index := s.idx[k]
			qs[k] = uint8(index)
			qh[ib] |= uint8(index>>8&1) << k
		}
		qs = qs[8:]
		copy(signs, blockSigns[:])
		signs = signs[4:]
		scales[ib] = scale
		maxScale = iq3FMax(maxScale, scale)
	}

	if maxScale == 0 {
		return
	}
	d := maxScale / 31
	binary.LittleEndian.PutUint16(y, FP32ToFP16(float32(d*1.033)))
	id := 1 / d
	for ib := 0; ib < 8; ib += 2 {
		l1 := nearestInt(float32(0.5 * float32(float32(id*scales[ib])-1)))
		l2 := nearestInt(float32(0.5 * float32(float32(id*scales[ib+1])-1)))
		packed[ib/2] = uint8(max(0, min(15, l1))) | uint8(max(0, min(15, l2)))<<4
	}
}

func decodeIQ3XXSRow(dst []float32, src []byte) {
	for ibl := range len(dst) / 256 {
		b := src[iq3XXSBlockBytes*ibl : iq3XXSBlockBytes*(ibl+1)]
		y := dst[256*ibl : 256*ibl+256]
		d := FP16ToFP32(binary.LittleEndian.Uint16(b))
		qs, scalesSigns := b[2:66], b[66:98]
		for ib := range 8 {
			aux := binary.LittleEndian.Uint32(scalesSigns[4*ib:])
			db := float32(float32(d*(0.5+float32(aux>>28))) * 0.5)
			for l := range 4 {
				sgn := iq3KSigns(aux >> (7 * l) & 127)
				g1, g2 := iq3xxsGrid[qs[8*ib+2*l]], iq3xxsGrid[qs[8*ib+2*l+1]]
				out := y[32*ib+8*l : 32*ib+8*l+8]
				for j := range 4 {
					out[j] = float32(db*float32(uint8(g1>>(8*j)))) * iq3Sign(sgn, j)
					out[j+4] = float32(db*float32(uint8(g2>>(8*j)))) * iq3Sign(sgn, j+4)
				}
			}
		}
	}
}

func decodeIQ3SRow(dst []float32, src []byte) {
	for ibl := range len(dst) / 256 {
		b := src[iq3SBlockBytes*ibl : iq3SBlockBytes*(ibl+1)]
		y := dst[256*ibl : 256*ibl+256]
		d := FP16ToFP32(binary.LittleEndian.Uint16(b))
		qs, qh, signs, scales := b[2:66], b[66:74], b[74:106], b[106:110]
		for ib := range 8 {
			db := float32(d * float32(1+2*int(scales[ib/2]>>(4*(ib%2))&0xf)))
			for l := range 4 {
				i1 := int(qs[8*ib+2*l]) | int(qh[ib]>>(2*l)&1)<<8
				i2 := int(qs[8*ib+2*l+1]) | int(qh[ib]>>(2*l+1)&1)<<8
				g1, g2 := iq3sGrid[i1], iq3sGrid[i2]
				sgn := signs[4*ib+l]
				out := y[32*ib+8*l : 32*ib+8*l+8]
				for j := range 4 {
					out[j] = float32(db*float32(uint8(g1>>(8*j)))) * iq3Sign(sgn, j)
					out[j+4] = float32(db*float32(uint8(g2>>(8*j)))) * iq3Sign(sgn, j+4)
				}
			}
		}
	}
}

// iq3Sign is ggml's (signs & kmask_iq2xs[j] ? -1.f : 1.f): a multiply,
// not a negation, as in ggml.
func iq3Sign(signs uint8, j int) float32 {
	if signs>>j&1 != 0 {
		return -1
	}
	return 1
}
