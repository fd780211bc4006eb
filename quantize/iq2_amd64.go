//go:build !purego

package quantize

// The amd64 kernel of the i-quant grid neighbour search (iq2_amd64.s); the
// purego build tag turns it off, and iq2_amd64_test.go checks it against
// the Go form.

// iq2NearestAVX2 is nearestGeneric on the n ≥ 1 neighbours whose packed
// points (2-bit levels, coordinate i in bits 2i, 2i+1) start at pts, eight
// neighbours in the lanes: each lane's distance is ggml's, products and
// the in-order sum rounded as the scalar loop rounds them (no fused
// multiply-add). It returns the position in the list of the first
// neighbour with the smallest distance below FLT_MAX, or -1 when there is
// none. It reads up to seven points past the list's end and ignores them.
//
//go:noescape
func iq2NearestAVX2(pts *uint16, n int, x, w *[8]float32, sv *[4]float32) int

// nearest is nearestGeneric, on AVX2 CPUs by iq2NearestAVX2.
func (g *iq2Grid) nearest(m int32, x, w *[8]float32, sv *[4]float32) int {
	if !useAVX2 {
		return g.nearestGeneric(m, x, w, sv)
	}
	off := int(-m - 1)
	n := int(g.neighbours[off])
	nb := g.neighbours[off+1 : off+1+n]
	k := iq2NearestAVX2(&g.points[off+1], n, x, w, sv)
	if k < 0 {
		k = 0
	}
	return int(nb[k])
}

// setPoints fills g.points, the packed points of g.neighbours' entries at
// the same offsets (a list's count slot holds 0), followed by eight zeros
// that the kernel may read past the last list.
func (g *iq2Grid) setPoints(kgrid []uint16) {
	g.points = make([]uint16, len(g.neighbours)+8)
	for off := 0; off < len(g.neighbours); off += 1 + int(g.neighbours[off]) {
		n := int(g.neighbours[off])
		for k, j := range g.neighbours[off+1 : off+1+n] {
			g.points[off+1+k] = kgrid[j]
		}
	}
}
