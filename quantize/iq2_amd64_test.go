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

// iq2TestXW draws the values (at scale) and the weights (half of the time
// non-negative) of a neighbour search.
func iq2TestXW(r *rand.Rand, scale float64) (x, w [8]float32) {
	iq2TestVector(r, &x, r.IntN(5), scale)
	iq2TestVector(r, &w, r.IntN(5), 1)
	if r.IntN(2) == 0 {
		for i := range w {
			w[i] = abs32(w[i])
		}
	}
	return x, w
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
				x, w := iq2TestXW(r, scale)
				s := float32(r.NormFloat64() * scale)
				vals := &[][3]float32{iq2Vals, iq1XP, iq1XM, {float32(r.IntN(3)), float32(r.IntN(3)), float32(r.IntN(3))}}[r.IntN(4)]
				if r.IntN(8) == 0 {
					s = float32(r.IntN(3))
				}
				want := g.nearestGeneric(m, &x, &w, vals, s)
				if got := g.nearest(m, &x, &w, vals, s); got != want {
					t.Fatalf("m=%d x=%v w=%v vals=%v scale=%v: %d, want %d", m, x, w, *vals, s, got, want)
				}
			}
		})
	}
}

// TestIQ2TrialsAVX2 compares the trial loop with the trials in the lanes
// with the plain one: groups of 32 with IQ2_XXS's 13 trials and of 16 with
// the 19 of IQ2_XS and IQ2_S, Gaussian values at scales from 1e-30 to 1e30
// (a negative one as IQ2_XXS's sign parity makes), repeated values, zero
// and negative weights, and trial scales far below the values' (levels out
// of nearest_int's range, where the plain loop runs).
func TestIQ2TrialsAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(18, 3333))
	cases := []struct {
		name    string
		g       *iq2Grid
		n, nids int
	}{
		{"IQ2_XXS", iq2xxsTables(), 32, 13},
		{"IQ2_XS", iq2xsTables(), 16, 19},
		{"IQ2_S", iq2sTables(), 16, 19},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var sc gridScratch // kept from one search to the next, as the encoders keep it
			for iter := range 4000 {
				scale := math.Pow(10, float64(r.IntN(61)-30))
				var xval, weight, waux [32]float32
				var maxv float32
				for i := range c.n {
					xval[i] = abs32(float32(r.NormFloat64() * scale))
					if iter%4 == 1 {
						xval[i] = float32(scale) * float32(r.IntN(3))
					}
					weight[i] = float32(r.ExpFloat64())
					switch r.IntN(10) {
					case 0:
						weight[i] = 0
					case 1:
						if iter%3 == 0 {
							weight[i] = -weight[i]
						}
					}
					waux[i] = float32(math.Sqrt(float64(abs32(weight[i]))))
					maxv = max(maxv, xval[i])
				}
				if iter%2 == 0 {
					xval[r.IntN(c.n)] *= -1
				}
				if maxv == 0 {
					continue
				}
				ref := maxv
				if iter%5 == 0 {
					ref = maxv * float32(math.Pow(10, -float64(r.IntN(10))))
				}
				ids := make([]float32, c.nids)
				iq2TrialIDs(ids, ref)
				init := ref / 5
				var L, Lg [32]uint8
				var on, ong [4]bool
				got := c.g.trials(&sc, ids, xval[:c.n], weight[:c.n], waux[:c.n], init, L[:], on[:])
				want := c.g.trialsGeneric(ids, xval[:c.n], weight[:c.n], waux[:c.n], init, Lg[:], ong[:])
				if math.Float32bits(got) != math.Float32bits(want) || L != Lg || on != ong {
					t.Fatalf("iter %d: scale %g L %v on %v, want %g %v %v", iter, got, L, on, want, Lg, ong)
				}
			}
		})
	}
}
