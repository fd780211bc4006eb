//go:build !purego

package quantize

// The amd64 kernel of the i-quant grid neighbour search (iq2_amd64.s); the
// purego build tag turns it off, and iq2_amd64_test.go checks it against
// the Go form.

// iq2NearestAVX2 is nearestGeneric on the n ≥ 1 neighbours whose packed
// points (2-bit levels, coordinate i in bits 2i, 2i+1) start at pts, eight
// neighbours in the lanes: each lane's distance is ggml's, the products
// scale·vals[l], the others and the in-order sum rounded as the scalar
// loop rounds them (no fused multiply-add). It returns the position in the list of the first
// neighbour with the smallest distance below FLT_MAX, or -1 when there is
// none. It reads up to seven points past the list's end and ignores them.
//
//go:noescape
func iq2NearestAVX2(pts *uint16, n int, x, w *[8]float32, vals *[3]float32, scale float32) int

// nearest is nearestGeneric, on AVX2 CPUs by iq2NearestAVX2.
func (g *iq2Grid) nearest(m int32, x, w *[8]float32, vals *[3]float32, scale float32) int {
	if !useAVX2 {
		return g.nearestGeneric(m, x, w, vals, scale)
	}
	off := int(-m - 1)
	n := int(g.neighbours[off])
	nb := g.neighbours[off+1 : off+1+n]
	k := iq2NearestAVX2(&g.points[off+1], n, x, w, vals, scale)
	if k < 0 {
		k = 0
	}
	return int(nb[k])
}

// neighbourPoints returns the packed points of the entries of the
// neighbour lists (ggml's layout: a count, then that many grid indices into
// kgrid) at the same offsets, a count slot holding 0, followed by eight
// zeros that the kernels may read past the last list.
func neighbourPoints(neighbours, kgrid []uint16) []uint16 {
	points := make([]uint16, len(neighbours)+8)
	for off := 0; off < len(neighbours); off += 1 + int(neighbours[off]) {
		n := int(neighbours[off])
		for k, j := range neighbours[off+1 : off+1+n] {
			points[off+1+k] = kgrid[j]
		}
	}
	return points
}

// gridScratch holds the lanes of the vector trial loops, kept by the
// encoders from one group to the next (zeroing them for each group would
// cost a few per cent). The kernels lay their lanes out in rows of 32:
// q[32·i+t] is the grid value of value i in trial t, u[32·k+t] the packed
// point of group k in trial t; gi and on hold each trial's grid indices
// and which groups were on the grid.
type gridScratch struct {
	ids  [32]float32
	q    [32 * 32]float32
	u    [4 * 32]int32
	sums [64]float32
	gi   [32][4]int32
	on   [32][4]bool
}

// iq2LevelsAVX2 computes, for the trial inverse scales ids[0:8·nblk] in
// the lanes, ggml's levels MAX(0, MIN(2, nearest_int(0.5·(id·x−1)))) of the
// n values x (n a multiple of 8): q gets their grid values 2l+1, u the
// packed points of the groups of eight (level i at bits 2i). It returns
// false when some 0.5·(id·x−1) is NaN or of magnitude 2^22 or more, where
// nearest_int is not rounding to nearest even.
//
//go:noescape
func iq2LevelsAVX2(x *float32, n int, ids *[32]float32, nblk int, q *[32 * 32]float32, u *[4 * 32]int32) bool

// gridFitAVX2 computes ggml's fit sums of the trials in the lanes
// 0..8·nblk−1: Σ(w·x)·q into sums[t] and Σ(w·q)·q into sums[32+t], over
// the n values in index order.
//
//go:noescape
func gridFitAVX2(q *[32 * 32]float32, x, w *float32, n int, nblk int, sums *[64]float32)

// setIDs copies the trials' inverse scales into the lanes, the unused
// lanes of the last block repeating the last one, and returns the number
// of blocks of eight.
func (tr *gridScratch) setIDs(ids []float32) int {
	nt := len(ids)
	nblk := (nt + 7) / 8
	copy(tr.ids[:], ids)
	for t := nt; t < 8*nblk; t++ {
		tr.ids[t] = ids[nt-1]
	}
	return nblk
}

// trials is trialsGeneric with the trials in the lanes of AVX2 vectors
// (up to 32 of them, 16 or 32 values): the levels and packed points of
// every trial by iq2LevelsAVX2, the grid lookups and the neighbour searches
// of the off-grid groups one by one, the fit sums by gridFitAVX2, each lane
// rounding as ggml's scalar loop; the choice among the trials then runs in
// ggml's order with ggml's comparisons.
func (g *iq2Grid) trials(tr *gridScratch, ids, xval, weight, waux []float32, scale float32, L []uint8, onGrid []bool) float32 {
	n, nt := len(xval), len(ids)
	if !useAVX2 || nt > 32 || (n != 16 && n != 32) {
		return g.trialsGeneric(ids, xval, weight, waux, scale, L, onGrid)
	}
	gi, on := &tr.gi, &tr.on
	nblk := tr.setIDs(ids)
	if !iq2LevelsAVX2(&xval[0], n, &tr.ids, nblk, &tr.q, &tr.u) {
		return g.trialsGeneric(ids, xval, weight, waux, scale, L, onGrid)
	}
	for t, id := range ids {
		thisScale := 1 / id
		for k := range n / 8 {
			m := g.index[tr.u[32*k+t]]
			if m >= 0 {
				gi[t][k], on[t][k] = m, true
				continue
			}
			j := g.nearest(m, (*[8]float32)(xval[8*k:8*k+8]), (*[8]float32)(waux[8*k:8*k+8]), &iq2Vals, thisScale)
			gi[t][k], on[t][k] = int32(j), false
			for i, v := range &g.values[j] {
				tr.q[32*(8*k+i)+t] = v
			}
		}
	}
	gridFitAVX2(&tr.q, &xval[0], &weight[0], n, nblk, &tr.sums)
	var best float32
	win := -1
	for t := range nt {
		sumqx, sumq2 := tr.sums[t], tr.sums[32+t]
		if sumq2 > 0 && sumqx*sumqx > best*sumq2 {
			scale = sumqx / sumq2
			best = scale * sumqx
			win = t
		}
	}
	if win >= 0 {
		for k := range n / 8 {
			copy(L[8*k:8*k+8], g.levels[gi[win][k]][:])
			onGrid[k] = on[win][k]
		}
	}
	return scale
}
