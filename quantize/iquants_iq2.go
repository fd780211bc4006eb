package quantize

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/ggufkit/ggufkit/gguf"
)

// IQ2_XXS, IQ2_XS and IQ2_S: 2-bit "i-quants" whose groups of eight
// magnitudes are points of a fixed grid (256, 512 and 1024 points), ported
// from quantize_row_iq2_xxs_impl, quantize_row_iq2_xs_impl,
// quantize_row_iq2_s_impl, iq2_find_best_neighbour and the matching
// dequantize_row_* (ggml/src/ggml-quants.c), as ggml_quantize_chunk calls
// them. IQ2_XXS and IQ2_XS need importance weights (ggml asserts them);
// IQ2_S uses them when given and weights by x² + σ²/4 otherwise.
//
// Where ggml aborts: GGML_ASSERT(grid_index >= 0) in iq2_find_best_neighbour
// fails when every candidate's weighted distance is NaN or at least
// FLT_MAX, "Oops: found point not on grid" follows from it, and
// GGML_ASSERT(scale >= 0) fails on a NaN scale. Finite input reaches them
// only through float overflow (|x| around 1e16 and beyond, or huge or
// negative importance weights); the block scale then overflows fp16 anyway
// and the output fails validation. This port does not panic there: the
// search takes the first listed (nearest) grid point, an off-grid point
// its nearest grid point (iq2Grid.gridIndex), and a NaN scale is carried
// through as ggml's arithmetic would.

func init() {
	register(gguf.IQ2_XXS, &codec{encodeRow: encodeIQ2XXSRow, decodeRow: decodeIQ2XXSRow, needsImatrix: true, usesImatrix: true})
	register(gguf.IQ2_XS, &codec{encodeRow: encodeIQ2XSRow, decodeRow: decodeIQ2XSRow, needsImatrix: true, usesImatrix: true})
	register(gguf.IQ2_S, &codec{encodeRow: encodeIQ2SRow, decodeRow: decodeIQ2SRow, usesImatrix: true})
}

const (
	iq2xxsBlockBytes = 66 // block_iq2_xxs: d, qs[32] uint16 (per 32: 4 grid bytes, 4×7 sign bits, 4-bit scale)
	iq2xsBlockBytes  = 74 // block_iq2_xs: d, qs[32] uint16 (9-bit grid index, 7 sign bits), scales[8]
	iq2sBlockBytes   = 82 // block_iq2_s: d, qs[64] (32 grid low bytes, 32 sign bytes), qh[8], scales[8]
	iq2MaxLevel      = 2  // kMaxQ-1: levels 0..2 stand for the odd values 1, 3, 5
)

// iq2Vals holds the grid values 2l+1 of the levels l = 0..2.
var iq2Vals = [3]float32{1, 3, 5}

// iq2FMax is C's MAX(a, b) macro, a > b ? a : b, which ggml uses for running
// maxima: unlike Go's max it returns b when either is NaN.
func iq2FMax(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

// iq2Level is ggml's MAX(0, MIN(kMaxQ-1, nearest_int(0.5f*(id*x-1)))): the
// level 0..2 of the odd value 2l+1 nearest to id·x.
func iq2Level(id, x float32) uint8 {
	return uint8(max(0, min(iq2MaxLevel, nearestInt(float32(0.5*float32(float32(id*x)-1))))))
}

// iq2Pack packs eight levels as ggml's map indexes points (level i in bits
// 2i, 2i+1). Every path on which ggml finishes a block has levels 0..2
// here; the clamp keeps the NaN paths on which ggml aborts inside the map.
func iq2Pack(L []uint8) int {
	u := 0
	for i, l := range L[:8] {
		u |= int(min(l, iq2MaxLevel)) << (2 * i)
	}
	return u
}

// iq2Weights fills weight with ggml's qw[i]·sqrtf(sigma2 + x[i]²) and waux
// with the square roots of those weights.
func iq2Weights(weight, waux, xb, qw []float32, sigma2 float32) {
	for i, x := range xb {
		weight[i] = qw[i] * float32(math.Sqrt(float64(sigma2+float32(x*x))))
	}
	for i, w := range weight[:len(xb)] {
		waux[i] = float32(math.Sqrt(float64(w)))
	}
}

// iq2Sigma2 is ggml's sigma2 = c·sumx2/QK_K of a 256-value super-block (c
// is 1 for IQ2_XXS and IQ2_XS, 2 for the others), summed in order in
// float. The outer conversion matters: the compiler turns /256 into a
// multiply by 1/256, which it would otherwise fuse with the + x² that
// follows (exact except when the quotient is subnormal).
func iq2Sigma2(xbl []float32, c float32) float32 {
	var s float32
	for _, x := range xbl[:256] {
		s += float32(x * x)
	}
	return float32(float32(c*s) / 256)
}

// iq2EvenSigns is the sign step of IQ2_XXS and IQ2_XS for eight values:
// xval gets |xb| and the result has bit i set for a negative xb[i]. Only 7
// sign bits are stored, the eighth being implied by even parity, so with an
// odd count the value of least weighted square w·x² takes the wrong sign:
// its bit is toggled and it enters the fit negated (first minimum wins).
func iq2EvenSigns(xval, xb, weight []float32) uint8 {
	nflip := 0
	var s uint8
	for i, x := range xb[:8] {
		if x >= 0 {
			xval[i] = x
		} else {
			xval[i] = -x
			nflip++
			s |= 1 << i
		}
	}
	if nflip%2 != 0 {
		imin := 0
		lo := float32(weight[0]*xb[0]) * xb[0]
		for i := 1; i < 8; i++ {
			if ax := float32(weight[i]*xb[i]) * xb[i]; ax < lo {
				lo, imin = ax, i
			}
		}
		xval[imin] = -xval[imin]
		s ^= 1 << imin
	}
	return s & 127
}

// bestNeighbour is iq2_find_best_neighbour: among the neighbours of the
// off-grid point whose index entry is m, the grid point closest to xval at
// scale by squared error weighted by w (ties keep the earlier entry); L
// gets its levels.
func (g *iq2Grid) bestNeighbour(m int32, xval, w []float32, scale float32, L []uint8) {
	gi := g.nearest(m, (*[8]float32)(xval[:8]), (*[8]float32)(w[:8]), &iq2Vals, scale)
	copy(L[:8], g.levels[gi][:])
}

// iq2Fit is the weighted least-squares fit of xval by the odd values
// 2L+1: Σw·x·q and Σw·q², summed in order in float.
func iq2Fit(weight, xval []float32, L []uint8) (sumqx, sumq2 float32) {
	for i, w := range weight {
		q := float32(2*int(L[i]) + 1)
		sumqx += float32(float32(w*xval[i]) * q)
		sumq2 += float32(float32(w*q) * q)
	}
	return sumqx, sumq2
}

// iq2Sub is the per-group search state of IQ2_XS and IQ2_S (groups of 16).
type iq2Sub struct {
	weight, xval, waux [16]float32
	L                  [16]uint8
	onGrid             [2]bool
	sc                 gridScratch
}

// iq2TrialIDs fills ids with ggml's trial inverse scales
// (2·kMaxQ−1 + is·0.1)/max for is = −n/2 .. n/2, in that order.
func iq2TrialIDs(ids []float32, max float32) {
	h := len(ids) / 2
	for t := range ids {
		is := t - h
		ids[t] = (2*iq2MaxLevel + 1 + float32(float32(is)*0.1)) / max
	}
}

// trialsGeneric is the trial loop that quantize_row_iq2_xxs_impl,
// quantize_row_iq2_xs_impl and quantize_row_iq2_s_impl share: for each
// inverse scale id in ids, in order, the levels of xval (16 or 32 values)
// at id, each group of eight snapped to the grid (an off-grid group
// becomes its best neighbour at 1/id), and their weighted fit; a fit
// that beats the best so far (ggml's first-wins comparison, best starting
// at 0) sets the scale to Σw·x·q/Σw·q² and L and onGrid (one flag a group)
// to its levels. It returns that scale, or scale when no trial wins.
func (g *iq2Grid) trialsGeneric(ids, xval, weight, waux []float32, scale float32, L []uint8, onGrid []bool) float32 {
	n := len(xval)
	var (
		laux  [32]uint8
		onAux [4]bool
		best  float32
	)
	for _, id := range ids {
		thisScale := 1 / id
		for k := range n / 8 {
			u := 0
			for i := range 8 {
				l := iq2Level(id, xval[8*k+i])
				laux[8*k+i] = l
				u |= int(l) << (2 * i)
			}
			onAux[k] = true
			if m := g.index[u]; m < 0 {
				onAux[k] = false
				g.bestNeighbour(m, xval[8*k:], waux[8*k:], thisScale, laux[8*k:])
			}
		}
		sumqx, sumq2 := iq2Fit(weight[:n], xval, laux[:n])
		if sumq2 > 0 && sumqx*sumqx > best*sumq2 {
			scale = sumqx / sumq2
			best = scale * sumqx
			copy(L[:n], laux[:n])
			copy(onGrid, onAux[:n/8])
		}
	}
	return scale
}

// search is the scale search shared by quantize_row_iq2_xs_impl and
// quantize_row_iq2_s_impl for one group of 16 whose largest xval is max:
// 19 trial scales around max/5, each point snapped to the grid, keeping
// the best fit; then the off-grid halves of the winner are redone at the
// fitted scale. It returns the scale; s.L holds the levels.
func (s *iq2Sub) search(g *iq2Grid, max float32) float32 {
	s.L = [16]uint8{}
	s.onGrid = [2]bool{true, true}
	var ids [19]float32
	iq2TrialIDs(ids[:], max)
	scale := g.trials(&s.sc, ids[:], s.xval[:], s.weight[:], s.waux[:], max/(2*iq2MaxLevel+1), s.L[:], s.onGrid[:])
	if (!s.onGrid[0] || !s.onGrid[1]) && scale > 0 {
		id := 1 / scale
		for k := range 2 {
			if s.onGrid[k] {
				continue
			}
			u := 0
			for i := range 8 {
				l := iq2Level(id, s.xval[8*k+i])
				s.L[8*k+i] = l
				u |= int(l) << (2 * i)
			}
			if m := g.index[u]; m < 0 {
				g.bestNeighbour(m, s.xval[8*k:], s.waux[8*k:], scale, s.L[8*k:])
			}
		}
		if sumqx, sumq2 := iq2Fit(s.weight[:], s.xval[:], s.L[:]); sumq2 > 0 {
			scale = sumqx / sumq2
		}
	}
	return scale
}

func encodeIQ2XXSRow(dst []byte, src, imatrix []float32) {
	g := iq2xxsTables()
	var sc gridScratch
	for ibl := range len(src) / 256 {
		encodeIQ2XXSBlock(g, &sc, dst[iq2xxsBlockBytes*ibl:iq2xxsBlockBytes*(ibl+1)], src[256*ibl:256*ibl+256], imatrix[256*ibl:256*ibl+256])
	}
}

// encodeIQ2XXSBlock is one super-block of quantize_row_iq2_xxs_impl: eight
// groups of 32, each four grid points (8-bit indices) with 7-bit sign
// patterns and a 4-bit scale.
func encodeIQ2XXSBlock(g *iq2Grid, sc *gridScratch, y []byte, xbl, qw []float32) {
	y = y[:iq2xxsBlockBytes]
	var (
		scales             [8]float32
		weight, xval, waux [32]float32
		L                  [32]uint8
		onGrid             [4]bool // only the trial loop's output: every group is redone
		blockSigns         [4]uint8
		q2                 [16]uint32
		maxScale           float32
	)
	sigma2 := iq2Sigma2(xbl, 1)
	for ib := range 8 {
		xb := xbl[32*ib : 32*ib+32]
		iq2Weights(weight[:], waux[:], xb, qw[32*ib:32*ib+32], sigma2)
		for k := range 4 {
			blockSigns[k] = iq2EvenSigns(xval[8*k:], xb[8*k:], weight[8*k:])
		}
		max := xval[0]
		for _, v := range xval[1:] {
			max = iq2FMax(max, v)
		}
		if max < groupMaxEps {
			scales[ib] = 0
			L = [32]uint8{}
			continue
		}
		// make_qp_quants fits levels 0..4 (ggml passes kMaxQ+1); only its
		// scale is used, as the starting point of the search.
		scale := makeQPQuants(iq2MaxLevel+2, xval[:], L[:], weight[:])
		effMax := scale * (iq2MaxLevel + 1)
		if effMax <= 0 {
			scales[ib] = 0
			L = [32]uint8{}
			continue
		}
		var ids [13]float32
		iq2TrialIDs(ids[:], effMax)
		scale = g.trials(sc, ids[:], xval[:], weight[:], waux[:], scale, L[:], onGrid[:])
		if scale > 0 {
			id := 1 / scale
			for k := range 4 {
				u := 0
				for i := range 8 {
					u |= int(iq2Level(id, xval[8*k+i])) << (2 * i)
				}
				if m := g.index[u]; m < 0 {
					g.bestNeighbour(m, xval[8*k:], waux[8*k:], scale, L[8*k:])
				} else {
					L8 := (*[8]uint8)(L[8*k : 8*k+8])
					*L8 = g.levels[m]
				}
			}
			if sumqx, sumq2 := iq2Fit(weight[:], xval[:], L[:]); sumq2 > 0 {
				scale = sumqx / sumq2
			}
		}
		if scale < 0 {
			// ggml: "should never happen" (negative importance weights get
			// here); flip the scale and every sign.
			scale = -scale
			for k := range blockSigns {
				blockSigns[k] = ^blockSigns[k] & 127
			}
		}
		for k := range 4 {
			q2[2*ib] |= uint32(g.gridIndex(iq2Pack(L[8*k:]))) << (8 * k)
			q2[2*ib+1] |= uint32(blockSigns[k]) << (7 * k)
		}
		scales[ib] = scale
		maxScale = iq2FMax(maxScale, scale)
	}

	if maxScale == 0 {
		clear(y)
		return
	}
	d := maxScale / 31
	binary.LittleEndian.PutUint16(y, FP32ToFP16(d))
	id := 1 / d
	for ib, sc := range scales {
		l := nearestInt(float32(0.5 * float32(float32(id*sc)-1)))
		q2[2*ib+1] |= uint32(max(0, min(15, l))) << 28
	}
	for i, v := range q2 {
		binary.LittleEndian.PutUint32(y[2+4*i:], v)
	}
}

func encodeIQ2XSRow(dst []byte, src, imatrix []float32) {
	g := iq2xsTables()
	var s iq2Sub
	for ibl := range len(src) / 256 {
		encodeIQ2XSBlock(g, &s, dst[iq2xsBlockBytes*ibl:iq2xsBlockBytes*(ibl+1)], src[256*ibl:256*ibl+256], imatrix[256*ibl:256*ibl+256])
	}
}

// encodeIQ2XSBlock is one super-block of quantize_row_iq2_xs_impl: sixteen
// groups of 16, each two grid points (9-bit indices) with 7-bit sign
// patterns, and a 4-bit scale.
func encodeIQ2XSBlock(g *iq2Grid, s *iq2Sub, y []byte, xbl, qw []float32) {
	y = y[:iq2xsBlockBytes]
	var (
		scales     [16]float32
		blockSigns [2]uint8
		q2         [32]uint16
		maxScale   float32
	)
	sigma2 := iq2Sigma2(xbl, 1)
	for ib := range 16 {
		xb := xbl[16*ib : 16*ib+16]
		iq2Weights(s.weight[:], s.waux[:], xb, qw[16*ib:16*ib+16], sigma2)
		for k := range 2 {
			blockSigns[k] = iq2EvenSigns(s.xval[8*k:], xb[8*k:], s.weight[8*k:])
		}
		max := s.xval[0]
		for _, v := range s.xval[1:] {
			max = iq2FMax(max, v)
		}
		if max < groupMaxEps {
			scales[ib] = 0
			continue
		}
		scale := s.search(g, max)
		if scale < 0 {
			scale = -scale
			for k := range blockSigns {
				blockSigns[k] = ^blockSigns[k] & 127
			}
		}
		for k := range 2 {
			q2[2*ib+k] = uint16(g.gridIndex(iq2Pack(s.L[8*k:]))) | uint16(blockSigns[k])<<9
		}
		scales[ib] = scale
		maxScale = iq2FMax(maxScale, scale)
	}

	clear(y)
	if maxScale == 0 {
		return
	}
	d := maxScale / 31
	binary.LittleEndian.PutUint16(y, FP32ToFP16(d))
	id := 1 / d
	sc := y[66:74]
	for ib, v := range scales {
		l := uint8(max(0, min(15, nearestInt(float32(0.5*float32(float32(id*v)-1))))))
		sc[ib/2] |= l << (4 * (ib % 2))
	}
	for i, v := range q2 {
		binary.LittleEndian.PutUint16(y[2+2*i:], v)
	}
}

func encodeIQ2SRow(dst []byte, src, imatrix []float32) {
	g := iq2sTables()
	var s iq2Sub
	for ibl := range len(src) / 256 {
		var qw []float32
		if imatrix != nil {
			qw = imatrix[256*ibl : 256*ibl+256]
		}
		encodeIQ2SBlock(g, &s, dst[iq2sBlockBytes*ibl:iq2sBlockBytes*(ibl+1)], src[256*ibl:256*ibl+256], qw)
	}
}

// encodeIQ2SBlock is one super-block of quantize_row_iq2_s_impl: sixteen
// groups of 16, each two grid points (10-bit indices) with 8 sign bits,
// and a 4-bit scale. Without importance weights the weights are
// σ²/4 + x², σ² = 2Σx²/256.
func encodeIQ2SBlock(g *iq2Grid, s *iq2Sub, y []byte, xbl, qw []float32) {
	y = y[:iq2sBlockBytes]
	clear(y)
	qs, signs, qh, sc := y[2:34], y[34:66], y[66:74], y[74:82]
	var (
		scales   [16]float32
		maxScale float32
	)
	sigma2 := iq2Sigma2(xbl, 2)
	for ib := range 16 {
		xb := xbl[16*ib : 16*ib+16]
		if qw != nil {
			iq2Weights(s.weight[:], s.waux[:], xb, qw[16*ib:16*ib+16], sigma2)
		} else {
			for i, x := range xb {
				s.weight[i] = float32(0.25*sigma2) + float32(x*x)
				s.waux[i] = float32(math.Sqrt(float64(s.weight[i])))
			}
		}
		var blockSigns [2]uint8
		for k := range 2 {
			for i, x := range xb[8*k : 8*k+8] {
				if x >= 0 {
					s.xval[8*k+i] = x
				} else {
					s.xval[8*k+i] = -x
					blockSigns[k] |= 1 << i
				}
			}
		}
		max := s.xval[0]
		for _, v := range s.xval[1:] {
			max = iq2FMax(max, v)
		}
		if max < groupMaxEpsIQ2S {
			scales[ib] = 0
			continue
		}
		scale := s.search(g, max)
		if scale < 0 {
			scale = -scale
			blockSigns[0], blockSigns[1] = ^blockSigns[0], ^blockSigns[1]
		}
		for k := range 2 {
			gi := g.gridIndex(iq2Pack(s.L[8*k:]))
			i8 := 2*ib + k
			qs[i8] = uint8(gi)
			qh[i8/4] |= uint8(gi>>8) << (2 * (i8 % 4))
			signs[i8] = blockSigns[k]
		}
		scales[ib] = scale
		maxScale = iq2FMax(maxScale, scale)
	}

	if maxScale == 0 {
		return
	}
	d := maxScale / 31
	binary.LittleEndian.PutUint16(y, FP32ToFP16(float32(d*0.9875))) // ggml's fudge factor
	id := 1 / d
	for ib, v := range scales {
		l := uint8(max(0, min(15, nearestInt(float32(0.5*float32(float32(id*v)-1))))))
		sc[ib/2] |= l << (4 * (ib % 2))
	}
}

// iq2Signs is ggml's ksigns_iq2xs (ggml-common.h) as a function: the 7
// stored sign bits s plus an eighth bit that makes the count even.
func iq2Signs(s uint32) uint8 {
	return uint8(s) | uint8(bits.OnesCount32(s)&1)<<7
}

// iq2SignOf is ggml's (signs & kmask_iq2xs[j] ? -1.f : 1.f), a factor that
// ggml multiplies by rather than negating.
var iq2SignOf = [2]float32{1, -1}

// iq2DecodeGroup writes the eight values db·grid[j]·(±1) of one grid point.
func iq2DecodeGroup(y []float32, grid *[8]uint8, db float32, signs uint8) {
	y = y[:8]
	for j, v := range grid {
		y[j] = float32(db*float32(v)) * iq2SignOf[signs>>j&1]
	}
}

// decodeIQ2XXSRow is dequantize_row_iq2_xxs.
func decodeIQ2XXSRow(dst []float32, src []byte) {
	for ibl := range len(src) / iq2xxsBlockBytes {
		x := src[iq2xxsBlockBytes*ibl : iq2xxsBlockBytes*(ibl+1)]
		d := FP16ToFP32(binary.LittleEndian.Uint16(x))
		y := dst[256*ibl : 256*ibl+256]
		for ib := range 8 {
			grid := x[2+8*ib : 2+8*ib+4]
			aux := binary.LittleEndian.Uint32(x[2+8*ib+4:])
			db := float32(d*(0.5+float32(aux>>28))) * 0.25
			for l := range 4 {
				iq2DecodeGroup(y[32*ib+8*l:], &iq2xxsDecodeGrid[grid[l]], db, iq2Signs(aux>>(7*l)&127))
			}
		}
	}
}

// decodeIQ2XSRow is dequantize_row_iq2_xs.
func decodeIQ2XSRow(dst []float32, src []byte) {
	for ibl := range len(src) / iq2xsBlockBytes {
		x := src[iq2xsBlockBytes*ibl : iq2xsBlockBytes*(ibl+1)]
		d := FP16ToFP32(binary.LittleEndian.Uint16(x))
		y := dst[256*ibl : 256*ibl+256]
		for ib := range 8 {
			s := x[66+ib]
			db := [2]float32{
				float32(d*(0.5+float32(s&0xf))) * 0.25,
				float32(d*(0.5+float32(s>>4))) * 0.25,
			}
			for l := range 4 {
				q := binary.LittleEndian.Uint16(x[2+8*ib+2*l:])
				iq2DecodeGroup(y[32*ib+8*l:], &iq2xsDecodeGrid[q&511], db[l/2], iq2Signs(uint32(q>>9)))
			}
		}
	}
}

// decodeIQ2SRow is dequantize_row_iq2_s.
func decodeIQ2SRow(dst []float32, src []byte) {
	for ibl := range len(src) / iq2sBlockBytes {
		x := src[iq2sBlockBytes*ibl : iq2sBlockBytes*(ibl+1)]
		d := FP16ToFP32(binary.LittleEndian.Uint16(x))
		qs, signs, qh, sc := x[2:34], x[34:66], x[66:74], x[74:82]
		y := dst[256*ibl : 256*ibl+256]
		for ib := range 8 {
			db := [2]float32{
				float32(d*(0.5+float32(sc[ib]&0xf))) * 0.25,
				float32(d*(0.5+float32(sc[ib]>>4))) * 0.25,
			}
			for l := range 4 {
				gi := int(qs[4*ib+l]) | int(qh[ib])<<(8-2*l)&0x300
				iq2DecodeGroup(y[32*ib+8*l:], &iq2sDecodeGrid[gi], db[l/2], signs[4*ib+l])
			}
		}
	}
}
