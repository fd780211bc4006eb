//go:build !purego

package quantize

import "golang.org/x/sys/cpu"

// The amd64 kernels of the scale searches (search_amd64.s); the purego
// build tag turns them off, and search_amd64_test.go checks them against
// the Go forms. None uses a fused multiply-add: each product is its own
// VMULPS, rounded to float32 as ggml's separate * and + are.

//go:noescape
func qxTrialsAVX2(x, w, wx *float32, n int, iscale *[24]float32, lohi *[2]float32, sums *[48]float32)

//go:noescape
func qx8AVX2(x, w *float32, n int, nums *[19]float32, lohi *[2]float32, s *qx8State)

//go:noescape
func q3x8AVX2(x *float32, s *q3x8State, nmax float32) bool

//go:noescape
func qkx8AVX2(x, w *float32, n int, s *qkx8State, nums *float32, ntrials int, nmax float32, mad bool) bool

// useAVX2 selects the vector kernels.
var useAVX2 = cpu.X86.HasAVX2

func makeQXQuants(nmax int, x []float32, L []int8, qw []float32) float32 {
	if !useAVX2 || len(x) == 0 {
		return makeQXQuantsGeneric(nmax, x, L, qw)
	}
	return makeQXQuantsAVX2(nmax, x, L, qw)
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
	lohi := [2]float32{float32(-nmax), float32(nmax - 1)}
	var sums [48]float32
	qxTrialsAVX2(&x[0], &w[0], &wx[0], n, &iscale, &lohi, &sums)
	sumlx, suml2 := sums[:24], sums[24:]
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

// qx8State is qx8AVX2's working set: the eight groups, their weights and
// weights·x transposed (value i of group j at [i][j]), the chosen levels,
// and per group the scale and a mask of the groups below GROUP_MAX_EPS.
type qx8State struct {
	x, w, wx [maxGroup][8]float32
	L        [maxGroup][8]int32
	scale    [8]float32
	zero     [8]uint32
}

// qxSearch8 is makeQXQuants on the eight groups of n values (n ≤ maxGroup)
// of x, with weights qw in the same layout (nil: x²): the levels go to L,
// the scales to scales. With AVX2 the groups run side by side in the lanes
// of qx8AVX2.
func qxSearch8(nmax int, x []float32, n int, L []int8, qw []float32, scales []float32) {
	if !useAVX2 || n > maxGroup || n == 0 {
		qxSearch8Generic(nmax, x, n, L, qw, scales)
		return
	}
	x, L, scales = x[:8*n], L[:8*n], scales[:8]
	var wp *float32
	if qw != nil {
		qw = qw[:8*n]
		wp = &qw[0]
	}
	var nums [19]float32
	nums[0] = float32(-nmax)
	rest := qxIScales(nmax, 1)
	copy(nums[1:], rest[:])
	lohi := [2]float32{float32(-nmax), float32(nmax - 1)}
	var s qx8State
	qx8AVX2(&x[0], wp, n, &nums, &lohi, &s)
	storeLanes(L, n, nmax, s.L[:n], &s.scale, &s.zero, scales)
}

// storeLanes stores the results of eight groups of n searched in lanes:
// lv[i][j] is the level of value i of group j, stored plus nmax in L, or
// group j's levels are cleared and its scale is 0 where zero[j] is set.
func storeLanes(L []int8, n, nmax int, lv [][8]int32, scale *[8]float32, zero *[8]uint32, scales []float32) {
	for j := range 8 {
		Lj := L[n*j : n*(j+1)]
		if zero[j] != 0 {
			scales[j] = 0
			clear(Lj)
			continue
		}
		scales[j] = scale[j]
		for i := range Lj {
			Lj[i] = int8(lv[i][j] + int32(nmax))
		}
	}
}

// qkx8State is qkx8AVX2's working set: the eight groups transposed (value
// i of group j at [i][j]), the levels of the current trial and of the best
// fit, and per group the min (of the best fit once one is accepted), max,
// Σw, Σw·x, best error, scale, and a mask of max == min.
type qkx8State struct {
	x, w, cur, best                        [maxGroup][8]float32
	minv, maxv, sumW, sumX, bestErr, scale [8]float32
	done                                   [8]uint32
}

// qkxSearch8 is makeQKXQuants on the eight groups of n values (n ≤
// maxGroup) of x, with weights w in the same layout: the levels go to L,
// the scales and -min to scales and mins. With AVX2 the groups run side by
// side in the lanes of qkx8AVX2; where the levels leave RoundToEven's exact
// range (a fitted min close to the max) they are searched again in plain
// Go.
func qkxSearch8(nmax int, x []float32, n int, w []float32, L []uint8, p qkxParams, scales, mins []float32) {
	var nums [qkxMaxTrials]float32
	if !useAVX2 || n == 0 || n > maxGroup || p.nstep < 1 || p.nstep >= len(nums) {
		qkxSearch8Generic(nmax, x, n, w, L, p, scales, mins)
		return
	}
	x, w, L, scales, mins = x[:8*n], w[:8*n], L[:8*n], scales[:8], mins[:8]
	fnmax := float32(nmax)
	for is := range p.nstep + 1 {
		nums[is] = float32(p.rmin+float32(p.rdelta*float32(is))) + fnmax
	}
	var s qkx8State
	if !qkx8AVX2(&x[0], &w[0], n, &s, &nums[0], p.nstep+1, fnmax, p.useMAD) {
		qkxSearch8Generic(nmax, x, n, w, L, p, scales, mins)
		return
	}
	for j := range 8 {
		Lj := L[n*j : n*(j+1)]
		if s.done[j] != 0 {
			scales[j], mins[j] = 0, -s.minv[j]
			clear(Lj)
			continue
		}
		scales[j], mins[j] = s.scale[j], -s.minv[j]
		for i := range Lj {
			Lj[i] = uint8(s.best[i][j])
		}
	}
}

// q3x8State is q3x8AVX2's working set: the eight groups of 16, x², x³ and
// the levels as floats transposed (value i of group j at [i][j]), the
// final levels as int32, and per group the scale and a mask of the groups
// below GROUP_MAX_EPS.
type q3x8State struct {
	x, w, wx, L [16][8]float32
	Li          [16][8]int32
	scale       [8]float32
	zero        [8]uint32
}

// q3Search8 is makeQ3Quants on the eight groups of 16 of x: the levels go
// to L, the scales to scales. With AVX2 the groups run side by side in the
// lanes of q3x8AVX2; where a level leaves RoundToEven's exact range they
// are searched again in plain Go.
func q3Search8(nmax int, x []float32, L []int8, scales []float32) {
	if !useAVX2 {
		q3Search8Generic(nmax, x, L, scales)
		return
	}
	x, L, scales = x[:128], L[:128], scales[:8]
	var s q3x8State
	if !q3x8AVX2(&x[0], &s, float32(nmax)) {
		q3Search8Generic(nmax, x, L, scales)
		return
	}
	storeLanes(L, 16, nmax, s.Li[:], &s.scale, &s.zero, scales)
}
