//go:build !purego

package quantize

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIQ3GroupsAVX2 compares the vector grid search of a sub-block with
// quantGroupsGeneric on both IQ3 grids: Gaussian magnitudes at scales from
// 1e-30 to 1e30 with the encoders' trial scales and others (zero, huge
// ones whose levels leave nearest_int's exact range, infinite and NaN),
// weights that are zero (every distance ties), infinite or NaN, values on
// the rounding midpoints, and repeated values.
func TestIQ3GroupsAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	r := rand.New(rand.NewPCG(3, 333))
	for _, tc := range []struct {
		name string
		t    *iq3Tables
	}{{"IQ3_XXS", iq3XXSTables()}, {"IQ3_S", iq3STables()}} {
		t.Run(tc.name, func(t *testing.T) {
			for iter := range 50000 {
				var xval, waux [32]float32
				scale := float32(math.Pow(10, float64(r.IntN(61)-30)))
				kind := iter % 6
				for i := range xval {
					xval[i] = abs32(float32(r.NormFloat64()) * scale)
					waux[i] = float32(r.ExpFloat64())
					switch kind {
					case 1: // repeated values, zero weights
						xval[i] = xval[i&^3]
						if r.IntN(3) == 0 {
							waux[i] = 0
						}
					case 2: // on the level midpoints: ties of the rounding
						xval[i] = float32(r.IntN(17)) * scale
					case 3: // weights that overflow or are not numbers
						switch r.IntN(8) {
						case 0:
							waux[i] = inf
						case 1:
							waux[i] = nan
						case 2:
							waux[i] = 1e30
						}
					case 4:
						waux[i] = 0
					}
				}
				mx := xval[0]
				for _, v := range xval[1:] {
					mx = iq3FMax(mx, v)
				}
				is := r.IntN(31) - 15
				id := float32(15+float32(float32(is)*0.2)) / mx
				switch kind {
				case 2:
					id = 1 / scale
				case 5:
					id = [...]float32{0, 1e30, 1e8, inf, nan, -1, float32(r.NormFloat64() * 1e7)}[r.IntN(7)]
				}
				sc := 1 / id
				if iter%7 == 0 {
					sc = float32(r.NormFloat64()) * scale
				}
				var got, want [8]int32
				gm := iq3GroupsAVX2(&xval, &waux, id, sc, &tc.t.vec.kmap, &tc.t.vec.blocks[0], &got)
				wm := tc.t.quantGroupsGeneric(&xval, &waux, id, sc, &want)
				if got != want || gm != wm {
					t.Fatalf("iter %d: id %g scale %g x %v w %v: grid %v on-grid %08b, want %v %08b", iter, id, sc, xval, waux, got, gm, want, wm)
				}
			}
		})
	}
}
