//go:build !purego

package quantize

import (
	"math"
	"math/rand/v2"
	"testing"
)

// iq2TestVector fills v with eight values drawn by kind: Gaussian at
// scale, all equal (neighbours at equal distance tie), small integers
// (exact ties between grid points), zeros of both signs, or with a NaN or
// an infinity.
func iq2TestVector(r *rand.Rand, v *[8]float32, kind int, scale float64) {
	c := float32(r.NormFloat64() * scale)
	for i := range v {
		switch kind {
		case 1:
			v[i] = c
		case 2:
			v[i] = float32(r.IntN(7))
		case 3:
			v[i] = float32(math.Copysign(0, r.NormFloat64()))
		default:
			v[i] = float32(r.NormFloat64() * scale)
		}
	}
	if kind == 4 {
		v[r.IntN(8)] = [3]float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[r.IntN(3)]
	}
}

// TestIQ2NearestAVX2 compares the vector neighbour search with the plain
// one on every grid (IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S/IQ1_M), for off-grid
// points throughout the map (lists of every length, the last one
// included), with values, weights and scaled grid values drawn from
// Gaussians at scales from 1e-30 to 1e30 (overflow to infinity included),
// ties, zeros, NaN and infinities, and negative weights.
func TestIQ2NearestAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(18, 2222))
	grids := map[string]*iq2Grid{"IQ2_XXS": iq2xxsTables(), "IQ2_XS": iq2xsTables(), "IQ2_S": iq2sTables(), "IQ1": iq1Tables()}
	for name, g := range grids {
		t.Run(name, func(t *testing.T) {
			var offGrid []int32
			for _, m := range g.index {
				if m < 0 {
					offGrid = append(offGrid, m)
				}
			}
			for iter := range 40000 {
				m := offGrid[r.IntN(len(offGrid))]
				if iter == 0 {
					m = offGrid[len(offGrid)-1]
				}
				scale := math.Pow(10, float64(r.IntN(61)-30))
				var x, w [8]float32
				iq2TestVector(r, &x, r.IntN(5), scale)
				iq2TestVector(r, &w, r.IntN(5), 1)
				if r.IntN(2) == 0 {
					for i := range w {
						w[i] = abs32(w[i])
					}
				}
				s := float32(r.NormFloat64() * scale)
				sv := [4]float32{s, s * 3, s * 5}
				if r.IntN(4) == 0 {
					sv = [4]float32{float32(r.IntN(3)), float32(r.IntN(3)), float32(r.IntN(3))}
				}
				want := g.nearestGeneric(m, &x, &w, &sv)
				if got := g.nearest(m, &x, &w, &sv); got != want {
					t.Fatalf("m=%d x=%v w=%v sv=%v: %d, want %d", m, x, w, sv, got, want)
				}
			}
		})
	}
}
