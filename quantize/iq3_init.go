package quantize

import "sync"

// iq3Tables is the search state that ggml's iq3xs_init_impl
// (ggml/src/ggml-quants.c) builds for one IQ3 grid: the grid points, a map
// from every packed quadruple of 3-bit levels to its grid index, and for
// every quadruple that is not a grid point the list of its nearest grid
// points.
type iq3Tables struct {
	// levels holds point k's four levels l (0..7), vals the same as the
	// float values 2l+1 (ggml's the_grid) that the distance search
	// multiplies by the scale.
	levels [][4]int8
	vals   [][4]float32
	// kmap is ggml's kmap_q3xs: for the quadruple packed as l0 | l1<<3 |
	// l2<<6 | l3<<9, its grid index, or -(off+1) where neighbours[off] is
	// the count n of its neighbour list and neighbours[off+1 : off+1+n]
	// the list.
	kmap [4096]int32
	// neighbours is ggml's kneighbors_q3xs.
	neighbours []uint16
	// neighbourVals[i] is vals of point neighbours[i] (zero at the count
	// entries), so the neighbour search reads memory in order.
	neighbourVals [][4]float32
	// vec holds the same lists in the layout of the vector search, where
	// there is one (iq3_amd64.go).
	vec iq3Vec
}

// The tables of each grid are built once, on first use, by whichever
// goroutine gets there first (ggml builds them in ggml_quantize_init).
var (
	iq3XXSTables = sync.OnceValue(func() *iq3Tables { return newIQ3Tables(iq3xxsKGrid[:], 2) })
	iq3STables   = sync.OnceValue(func() *iq3Tables { return newIQ3Tables(iq3sKGrid[:], 3) })
)

// newIQ3Tables ports iq3xs_init_impl for the packed grid kgrid. A quadruple
// off the grid gets every grid point whose squared distance is among the
// nwant smallest distinct distances (2 for the 256-point grid, 3 for the
// 512-point one), ordered by (distance, index) as ggml's qsort with
// iq3_compare_func orders them; that order is total, so the lists are
// deterministic.
func newIQ3Tables(kgrid []uint16, nwant int) *iq3Tables {
	n := len(kgrid)
	t := &iq3Tables{
		levels: make([][4]int8, n),
		vals:   make([][4]float32, n),
	}
	for k, g := range kgrid {
		for i := range 4 {
			l := int8(g >> (3 * i) & 7)
			t.levels[k][i] = l
			t.vals[k][i] = float32(2*l + 1)
		}
	}
	for i := range t.kmap {
		t.kmap[i] = -1
	}
	for k := range t.levels {
		t.kmap[packIQ3(&t.levels[k])] = int32(k)
	}

	dist := make([]int, n)
	for i := range t.kmap {
		if t.kmap[i] >= 0 {
			continue
		}
		var pos [4]int
		for k := range pos {
			pos[k] = 2*(i>>(3*k)&7) + 1
		}
		for j := range t.vals {
			d2 := 0
			for k, p := range pos {
				diff := 2*int(t.levels[j][k]) + 1 - p
				d2 += diff * diff
			}
			dist[j] = d2
		}
		off := len(t.neighbours)
		t.kmap[i] = -int32(off + 1)
		t.neighbours = append(t.neighbours, 0)
		t.neighbourVals = append(t.neighbourVals, [4]float32{})
		prev := -1
		for range nwant {
			// the next larger distinct distance
			next := -1
			for _, d := range dist {
				if d > prev && (next < 0 || d < next) {
					next = d
				}
			}
			if next < 0 {
				break
			}
			for j, d := range dist {
				if d == next {
					t.neighbours = append(t.neighbours, uint16(j))
					t.neighbourVals = append(t.neighbourVals, t.vals[j])
				}
			}
			prev = next
		}
		t.neighbours[off] = uint16(len(t.neighbours) - off - 1)
	}
	t.vec.init(t)
	return t
}

// packIQ3 packs four 3-bit levels as ggml indexes kmap_q3xs.
func packIQ3(l *[4]int8) int {
	return int(l[0]) | int(l[1])<<3 | int(l[2])<<6 | int(l[3])<<9
}
