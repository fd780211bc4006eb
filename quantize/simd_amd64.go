//go:build goexperiment.simd && amd64

package quantize

import "simd/archsimd"

// Vector kernels for GOEXPERIMENT=simd builds on amd64 with AVX2, the same
// bytes as the plain Go forms beside them (simd_test.go compares the two).
// None uses a fused multiply-add: each product is its own VMULPS, rounded
// to float32 as ggml's separate * and + are.

// hasAVX2 selects the vector kernels.
var hasAVX2 = archsimd.X86.AVX2()

func makeQXQuants(nmax int, x []float32, L []int8, qw []float32) float32 {
	if hasAVX2 {
		return makeQXQuantsAVX2(nmax, x, L, qw)
	}
	return makeQXQuantsGeneric(nmax, x, L, qw)
}

// makeQXQuantsAVX2 is makeQXQuants with the 19 trials side by side in the
// lanes of three 8-float vectors (lane 0 ggml's first trial, -nmax/max,
// lanes 1..18 its loop over is = -9..9 without 0, lanes 19..23 copies of
// lane 18 that are never looked at). Each lane adds its sums over x in
// ggml's index order, so each trial's sums are ggml's; the choice among the
// trials then runs in ggml's order with ggml's comparisons.
//
// A level is RoundToEven(t) clamped to [-nmax, nmax-1]: nearest_int(t) is
// t rounded to nearest even for |t| < 2^22, and here |t| ≤ nmax+1 since
// |x| ≤ max and |iscale| ≤ (nmax+0.9)/max. Where t rounds to zero from
// below the level is -0 instead of nearest_int's +0; its products are then
// zeros too, and a sum that starts at +0 is not changed by adding a zero of
// either sign, so the sums are the same.
func makeQXQuantsAVX2(nmax int, x []float32, L []int8, qw []float32) float32 {
	n := len(x)
	L = L[:n]
	maxv, amax := qxMax(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	var wbuf, wxbuf [maxGroup]float32
	w, wx := qxWeights(x, qw, &wbuf, &wxbuf)
	var iscale [24]float32
	iscale[0] = float32(-nmax) / maxv
	rest := qxIScales(nmax, maxv)
	copy(iscale[1:19], rest[:])
	for k := 19; k < 24; k++ {
		iscale[k] = rest[17]
	}
	is0 := archsimd.LoadFloat32x8((*[8]float32)(iscale[0:8]))
	is1 := archsimd.LoadFloat32x8((*[8]float32)(iscale[8:16]))
	is2 := archsimd.LoadFloat32x8((*[8]float32)(iscale[16:24]))
	lo := archsimd.BroadcastFloat32x8(float32(-nmax))
	hi := archsimd.BroadcastFloat32x8(float32(nmax - 1))
	var sx0, sx1, sx2, s20, s21, s22 archsimd.Float32x8
	w, wx = w[:n], wx[:n]
	for i, v := range x {
		vv := archsimd.BroadcastFloat32x8(v)
		a := archsimd.BroadcastFloat32x8(wx[i])
		b := archsimd.BroadcastFloat32x8(w[i])
		f0 := is0.Mul(vv).RoundToEven().Min(hi).Max(lo)
		f1 := is1.Mul(vv).RoundToEven().Min(hi).Max(lo)
		f2 := is2.Mul(vv).RoundToEven().Min(hi).Max(lo)
		sx0 = sx0.Add(a.Mul(f0))
		sx1 = sx1.Add(a.Mul(f1))
		sx2 = sx2.Add(a.Mul(f2))
		s20 = s20.Add(b.Mul(f0).Mul(f0))
		s21 = s21.Add(b.Mul(f1).Mul(f1))
		s22 = s22.Add(b.Mul(f2).Mul(f2))
	}
	var sumlx, suml2 [24]float32
	sx0.Store((*[8]float32)(sumlx[0:8]))
	sx1.Store((*[8]float32)(sumlx[8:16]))
	sx2.Store((*[8]float32)(sumlx[16:24]))
	s20.Store((*[8]float32)(suml2[0:8]))
	s21.Store((*[8]float32)(suml2[8:16]))
	s22.Store((*[8]float32)(suml2[16:24]))
	// The scalar code below is SSE, which runs slowly while the upper
	// halves of the vector registers are dirty.
	archsimd.ClearAVXUpperBits()
	var scale float32
	if suml2[0] != 0 {
		scale = sumlx[0] / suml2[0]
	}
	best := float32(scale * sumlx[0])
	chosen := 0
	for k := 1; k < 19; k++ {
		if suml2[k] > 0 && float32(sumlx[k]*sumlx[k]) > float32(best*suml2[k]) {
			scale = sumlx[k] / suml2[k]
			best = float32(scale * sumlx[k])
			chosen = k
		}
	}
	qxFill(L, x, iscale[chosen], nmax)
	return scale
}
