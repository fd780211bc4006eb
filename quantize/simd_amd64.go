//go:build goexperiment.simd && amd64

package quantize

import (
	"math"
	"simd/archsimd"
)

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
	archsimd.ClearAVXUpperBits() // for the scalar code before the vectors, as in makeQKXQuantsAVX
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

func makeQKXQuants(nmax int, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMAD bool) (scale, negMin float32) {
	if hasAVX2 && !useMAD && len(x) == qkxVec {
		return makeQKXQuantsAVX(nmax, (*[qkxVec]float32)(x), (*[qkxVec]float32)(weights), L, rmin, rdelta, nstep)
	}
	return makeQKXQuantsGeneric(nmax, x, weights, L, Laux, rmin, rdelta, nstep, useMAD)
}

// qkxVec is the group length makeQKXQuantsAVX takes (Q4_K's and Q5_K's
// sub-blocks, the legacy Q4_1 and Q5_1 blocks).
const qkxVec = 32

// makeQKXQuantsAVX is makeQKXQuantsGeneric for the squared error on 32
// values, with the per-value work of each trial on eight 4-float vectors:
// the levels, the products of the sums and the error terms. Only the
// additions of the sums and of the error stay scalar, in ggml's index
// order; every product is its own VMULPS (no FMA), rounded as ggml's. The
// 128-bit (VEX) vectors leave the upper register halves clean, so the
// scalar SSE code between them runs at full speed.
func makeQKXQuantsAVX(nmax int, x, weights *[qkxVec]float32, L []uint8, rmin, rdelta float32, nstep int) (scale, negMin float32) {
	// The scalar SSE code here runs slowly, on every instruction, while the
	// upper halves of the vector registers are dirty, and other code (or a
	// preempting signal's register restore) may leave them so.
	archsimd.ClearAVXUpperBits()
	L = L[:qkxVec]
	minv, maxv, sumW, sumX, scale, bestErr, done := qkxStart(nmax, x[:], weights[:], L, false)
	if done {
		return 0, -minv
	}
	const nv = qkxVec / 4
	var xs, ws [nv]archsimd.Float32x4
	for q := range nv {
		xs[q] = archsimd.LoadFloat32x4((*[4]float32)(x[4*q:]))
		ws[q] = archsimd.LoadFloat32x4((*[4]float32)(weights[4*q:]))
	}
	fnmax := float32(nmax)
	k := newQKXLevelConsts(nmax)
	var cur, prev, best [qkxVec]float32 // levels as floats
	var pl, pl2, plx, pe [qkxVec]float32
	accepted, havePrev := false, false
	var prevMin uint32
	for is := 0; is <= nstep; is++ {
		iscale := (float32(rmin+float32(rdelta*float32(is))) + fnmax) / (maxv - minv)
		qkxLevelsAVX(&cur, &xs, x, minv, iscale, &k)
		var changed uint8
		for q := range nv {
			c := archsimd.LoadFloat32x4((*[4]float32)(cur[4*q:]))
			changed |= c.NotEqual(archsimd.LoadFloat32x4((*[4]float32)(prev[4*q:]))).ToBits()
		}
		prev = cur
		if havePrev && changed == 0 && math.Float32bits(minv) == prevMin {
			continue
		}
		havePrev, prevMin = true, math.Float32bits(minv)
		for q := range nv {
			f := archsimd.LoadFloat32x4((*[4]float32)(cur[4*q:]))
			wl := ws[q].Mul(f)
			wl.Store((*[4]float32)(pl[4*q:]))
			wl.Mul(f).Store((*[4]float32)(pl2[4*q:]))
			wl.Mul(xs[q]).Store((*[4]float32)(plx[4*q:]))
		}
		var sumL, sumL2, sumXL float32
		for i := range qkxVec {
			sumL += pl[i]
			sumL2 += pl2[i]
			sumXL += plx[i]
		}
		d := float32(sumW*sumL2) - float32(sumL*sumL)
		if !(d > 0) { // as C's `if (D > 0)`, false for NaN too
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / d
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / d
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		sb := archsimd.BroadcastFloat32x4(thisScale)
		tb := archsimd.BroadcastFloat32x4(thisMin)
		for q := range nv {
			f := archsimd.LoadFloat32x4((*[4]float32)(cur[4*q:]))
			diff := sb.Mul(f).Add(tb).Sub(xs[q])
			ws[q].Mul(diff.Mul(diff)).Store((*[4]float32)(pe[4*q:]))
		}
		var curErr float32
		for _, e := range pe {
			curErr += e
		}
		if curErr < bestErr {
			best, accepted = cur, true
			bestErr = curErr
			scale, minv = thisScale, thisMin
		}
	}
	if accepted {
		for i, f := range best {
			L[i] = uint8(f)
		}
	}
	return scale, -minv
}

// qkxLevelsAVX stores in cur, as floats, the levels MAX(0, MIN(nmax,
// nearest_int(iscale·(x[i]-minv)))) of the 32 values x, also held in xs.
// A level is RoundToEven(t) clamped, with t = iscale·(x-min): nearest_int(t)
// is t rounded to nearest even while |t| < 2^22; where some |t| is not, or
// is NaN (ggml does not rule out a fitted min close to max), the group
// takes nearest_int's own wrapped results, value by value. Adding +0 turns
// the -0 that RoundToEven gives for t in (-0.5, 0) into nearest_int's 0.
func qkxLevelsAVX(cur *[qkxVec]float32, xs *[qkxVec / 4]archsimd.Float32x4, x *[qkxVec]float32, minv, iscale float32, k *qkxLevelConsts) {
	ib := archsimd.BroadcastFloat32x4(iscale)
	mb := archsimd.BroadcastFloat32x4(minv)
	inRange := uint8(0x0F)
	for q := range qkxVec / 4 {
		t := ib.Mul(xs[q].Sub(mb))
		inRange &= t.Less(k.lim).And(t.Greater(k.nlim)).ToBits()
		t.RoundToEven().Max(k.zero).Min(k.top).Add(k.zero).Store((*[4]float32)(cur[4*q:]))
	}
	if inRange != 0x0F {
		for i, v := range x {
			cur[i] = float32(min(k.nmax, max(0, nearestInt(float32(iscale*(v-minv))))))
		}
	}
}

// qkxLevelConsts are qkxLevelsAVX's constants for one nmax, broadcast once
// per group rather than once per trial.
type qkxLevelConsts struct {
	zero, top, lim, nlim archsimd.Float32x4
	nmax                 int32
}

func newQKXLevelConsts(nmax int) qkxLevelConsts {
	return qkxLevelConsts{
		zero: archsimd.BroadcastFloat32x4(0),
		top:  archsimd.BroadcastFloat32x4(float32(nmax)),
		lim:  archsimd.BroadcastFloat32x4(0x1p22),
		nlim: archsimd.BroadcastFloat32x4(-0x1p22),
		nmax: int32(nmax),
	}
}
