//go:build !amd64 || purego

package quantize

// Without the amd64 assembly, the neighbour search runs in plain Go.

func (g *iq2Grid) nearest(m int32, x, w *[8]float32, vals *[3]float32, scale float32) int {
	return g.nearestGeneric(m, x, w, vals, scale)
}

// neighbourPoints returns nil: the packed points are only read by the
// amd64 kernels.
func neighbourPoints(neighbours, kgrid []uint16) []uint16 { return nil }

// gridScratch is empty: only the vector trial loops keep lanes.
type gridScratch struct{}

func (g *iq2Grid) trials(_ *gridScratch, ids, xval, weight, waux []float32, scale float32, L []uint8, onGrid []bool) float32 {
	return g.trialsGeneric(ids, xval, weight, waux, scale, L, onGrid)
}
