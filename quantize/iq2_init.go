package quantize

import (
	"math"
	"math/bits"
	"sync"
)

// iq2MapSize is ggml's kmap_size: the map covers every 8-coordinate point
// packed as 2-bit levels (coordinate i in bits 2i, 2i+1) up to 0xAAAB, so
// that the point with every level 2 (0xAAAA), the largest an encoder ever
// looks up, is inside.
const iq2MapSize = 43692

// iq2Grid is the search state that ggml's iq2xs_init_impl
// (ggml/src/ggml-quants.c) builds for one grid of the iq2/iq1 family: the
// grid points, the map from packed points to grid indices, and for every
// packed point that is not on the grid the list of its nearest grid points.
// The map and neighbour arrays are laid out exactly as ggml's (same
// offsets, same lists), for every point ggml covers.
type iq2Grid struct {
	// levels holds point k's eight levels l (0..2); ggml's the_grid stores
	// them as the bytes 2l+1.
	levels [][8]uint8
	// values holds the same as the floats 2l+1, the grid values the
	// vector trial loop writes into its lanes for a neighbour it chose.
	values [][8]float32
	// index is ggml's kmap_q2xs: for a packed point u its grid index, or
	// -(off+1) where neighbours[off] is the count n of its neighbour list
	// and neighbours[off+1 : off+1+n] the list.
	index []int32
	// neighbours is ggml's kneighbors_q2xs.
	neighbours []uint16
	// points holds, on amd64, the packed point of each entry of
	// neighbours at the same offset, which the vector search reads
	// instead of gathering grid values (neighbourPoints).
	points []uint16
}

// The tables of each grid are built once, on first use, by whichever
// goroutine gets there first (ggml builds them in ggml_quantize_init).
// nwant, the number of distinct distances a neighbour list spans, is
// ggml's: 2 for IQ2_XXS and IQ2_XS, 1 for IQ2_S, 3 for IQ1_S and IQ1_M,
// which share the 2048-point grid.
var (
	iq2xxsTables = sync.OnceValue(func() *iq2Grid { return newIQ2Grid(iq2KGrid256[:], 2) })
	iq2xsTables  = sync.OnceValue(func() *iq2Grid { return newIQ2Grid(iq2KGrid512[:], 2) })
	iq2sTables   = sync.OnceValue(func() *iq2Grid { return newIQ2Grid(iq2KGrid1024[:], 1) })
	iq1Tables    = sync.OnceValue(func() *iq2Grid { return newIQ2Grid(iq1KGrid2048[:], 3) })
)

// newIQ2Grid ports iq2xs_init_impl for the packed grid kgrid. Every point
// below iq2MapSize that is not a grid point gets, in ascending order of the
// point, a list of every grid point whose squared distance is among the
// nwant smallest distinct distances, ordered by (distance, index) as ggml's
// qsort with iq2_compare_func orders them; that order is total, so the
// lists are deterministic. ggml sorts all distances; finding the nwant
// smallest with a bit mask and collecting their points in index order gives
// the same lists.
func newIQ2Grid(kgrid []uint16, nwant int) *iq2Grid {
	n := len(kgrid)
	g := &iq2Grid{
		levels: make([][8]uint8, n),
		values: make([][8]float32, n),
		index:  make([]int32, iq2MapSize),
	}
	for k, p := range kgrid {
		for i := range 8 {
			l := uint8(p >> (2 * i) & 3)
			g.levels[k][i] = l
			g.values[k][i] = float32(2*l + 1)
		}
	}
	for i := range g.index {
		g.index[i] = -1
	}
	for k, p := range kgrid {
		g.index[p] = int32(k)
	}

	// The squared distance between points with levels a and b is
	// 4·Σ(a_i−b_i)²; the factor 4 does not change the order, so the search
	// uses Σ(a_i−b_i)² (at most 8·3² = 72). part[x][y] is that sum over the
	// four coordinates packed in the bytes x and y.
	part := new([256][256]uint8)
	for x := range 256 {
		for y := range 256 {
			s := 0
			for i := range 4 {
				d := x>>(2*i)&3 - y>>(2*i)&3
				s += d * d
			}
			part[x][y] = uint8(s)
		}
	}
	lo := make([]uint8, n)
	hi := make([]uint8, n)
	for k, p := range kgrid {
		lo[k], hi[k] = uint8(p), uint8(p>>8)
	}
	dist := make([]uint8, n)
	lists := [3][]uint16{make([]uint16, 0, n), make([]uint16, 0, n), make([]uint16, 0, n)}
	var rank [73]int8
	for i := range rank {
		rank[i] = -1
	}
	for u := range iq2MapSize {
		if g.index[u] >= 0 {
			continue
		}
		pl, ph := &part[u&255], &part[u>>8]
		var present [2]uint64 // bit d: some grid point is at distance d
		for j := range n {
			d := pl[lo[j]] + ph[hi[j]]
			dist[j] = d
			present[d>>6] |= 1 << (d & 63)
		}
		var want [3]uint8
		nd := 0
		for w := 0; w < 2 && nd < nwant; w++ {
			for m := present[w]; m != 0 && nd < nwant; m &= m - 1 {
				want[nd] = uint8(64*w + bits.TrailingZeros64(m))
				rank[want[nd]] = int8(nd)
				nd++
			}
		}
		for j, d := range dist {
			if r := rank[d]; r >= 0 {
				lists[r] = append(lists[r], uint16(j))
			}
		}
		off := len(g.neighbours)
		g.index[u] = -int32(off) - 1
		count := 0
		for r := range nd {
			count += len(lists[r])
		}
		g.neighbours = append(g.neighbours, uint16(count))
		for r := range nd {
			g.neighbours = append(g.neighbours, lists[r]...)
			lists[r] = lists[r][:0]
			rank[want[r]] = -1
		}
	}
	g.points = neighbourPoints(g.neighbours, kgrid)
	return g
}

// neighboursOf returns the neighbour list of the off-grid point whose index
// entry is m (< 0).
func (g *iq2Grid) neighboursOf(m int32) []uint16 {
	off := int(-m - 1)
	return g.neighbours[off+1 : off+1+int(g.neighbours[off])]
}

// nearestGeneric is the neighbour search of iq2_find_best_neighbour and
// iq1_find_best_neighbour2: among the neighbours of the off-grid point
// whose index entry is m, the grid point j minimising
// Σ w[i]·(sv[l]−x[i])², l the level of coordinate i of j and sv[l] ggml's
// rounded product scale·vals[l] of the scale and that level's grid value,
// each product rounded and the sum taken in index order as ggml's loop
// does. Ties keep the earlier entry. ggml asserts that some distance is
// below FLT_MAX; when none is (overflow or NaN), the first listed
// neighbour, one of the nearest in level space, is returned.
func (g *iq2Grid) nearestGeneric(m int32, x, w *[8]float32, vals *[3]float32, scale float32) int {
	sv := [4]float32{scale * vals[0], scale * vals[1], scale * vals[2]}
	nb := g.neighboursOf(m)
	best := float32(math.MaxFloat32)
	gi := int(nb[0])
	for _, j := range nb {
		// ggml's loop over the eight coordinates, unrolled: the products
		// are independent, the sum runs in index order.
		p := &g.levels[j]
		e0 := sv[p[0]&3] - x[0]
		e1 := sv[p[1]&3] - x[1]
		e2 := sv[p[2]&3] - x[2]
		e3 := sv[p[3]&3] - x[3]
		e4 := sv[p[4]&3] - x[4]
		e5 := sv[p[5]&3] - x[5]
		e6 := sv[p[6]&3] - x[6]
		e7 := sv[p[7]&3] - x[7]
		d2 := float32(float32(w[0]*e0) * e0)
		d2 += float32(float32(w[1]*e1) * e1)
		d2 += float32(float32(w[2]*e2) * e2)
		d2 += float32(float32(w[3]*e3) * e3)
		d2 += float32(float32(w[4]*e4) * e4)
		d2 += float32(float32(w[5]*e5) * e5)
		d2 += float32(float32(w[6]*e6) * e6)
		d2 += float32(float32(w[7]*e7) * e7)
		if d2 < best {
			best, gi = d2, int(j)
		}
	}
	return gi
}

// gridIndex returns the grid index of the packed point u, the form every
// encoder writes. ggml aborts when u is off the grid ("Oops: found point
// not on grid"), which only NaN or overflowed intermediates can cause;
// there the nearest grid point, the first of u's neighbours, stands in, so
// that finite input of any size encodes without a panic.
func (g *iq2Grid) gridIndex(u int) int {
	m := g.index[u]
	if m >= 0 {
		return int(m)
	}
	return int(g.neighbours[-m])
}

// The decode grids of ggml-common.h (iq2xxs_grid, iq2xs_grid, iq2s_grid,
// iq1s_grid), expanded from the packed grids of iq2_tables.go: ggml's
// tables list the same points in the same order, the iq2 ones with level l
// as the byte {8, 25, 43}[l] and iq1s_grid with l−1. TestIQ2DecodeGrids
// checks them against hashes of ggml's tables.
var (
	iq2xxsDecodeGrid [256][8]uint8
	iq2xsDecodeGrid  [512][8]uint8
	iq2sDecodeGrid   [1024][8]uint8
	iq1sDecodeGrid   [2048][8]int8
)

func init() {
	mag := [3]uint8{8, 25, 43}
	expand := func(dst [][8]uint8, kgrid []uint16) {
		for k, p := range kgrid {
			for i := range 8 {
				dst[k][i] = mag[p>>(2*i)&3]
			}
		}
	}
	expand(iq2xxsDecodeGrid[:], iq2KGrid256[:])
	expand(iq2xsDecodeGrid[:], iq2KGrid512[:])
	expand(iq2sDecodeGrid[:], iq2KGrid1024[:])
	for k, p := range iq1KGrid2048 {
		for i := range 8 {
			iq1sDecodeGrid[k][i] = int8(p>>(2*i)&3) - 1
		}
	}
}
