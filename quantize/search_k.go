package quantize

import "math"

// Scale searches of the K-quants and of the legacy types' imatrix path,
// ported from ggml-quants.c (make_qx_quants L628, make_q3_quants L697,
// make_qkx2_quants L799, make_qkx3_quants L993). Every float32 product that
// ggml rounds on its own is wrapped in float32(...) so Go cannot fuse it into
// an FMA; ggml is built without FMA.

// sqrt32 is C's sqrtf: the float64 square root rounded to float32 is the
// correctly rounded float32 square root.
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// absMaxSigned returns the value of largest magnitude of x, the first one on
// ties, as ggml's `if (amax < fabsf(v)) { amax = fabsf(v); max = v; }`
// loops pick it. x must hold no NaN (the encoders' input is finite): for
// other floats the magnitude order is the integer order of the bits without
// the sign, which is cheaper to compare.
func absMaxSigned(x []float32) float32 {
	return signedAt(x, absMaxBits(x))
}

// absMaxBits is the largest magnitude of x as float32 bits without the
// sign, found without a branch per value. It is at least 0x7F800000 exactly
// when x holds a NaN or an infinity, which lets the fused encoders
// (codec.encodeFinite) check the input in the same pass.
func absMaxBits(x []float32) uint32 {
	// Two independent chains of max, so that one does not wait on the other.
	var a0, a1 uint32
	i := 0
	for ; i+2 <= len(x); i += 2 {
		a0 = max(a0, math.Float32bits(x[i])&^(1<<31))
		a1 = max(a1, math.Float32bits(x[i+1])&^(1<<31))
	}
	if i < len(x) {
		a0 = max(a0, math.Float32bits(x[i])&^(1<<31))
	}
	return max(a0, a1)
}

// signedAt is the first value of x whose magnitude has the bits amax (from
// absMaxBits), or 0 when amax is 0: ggml's max stays at its initial +0 when
// every value is ±0.
func signedAt(x []float32, amax uint32) float32 {
	if amax == 0 {
		return 0
	}
	for _, v := range x {
		if math.Float32bits(v)&^(1<<31) == amax {
			return v
		}
	}
	return 0
}

// maxGroup is the longest group the searches take (ggml calls them on 16 or
// 32 values); their scratch arrays live on the stack.
const maxGroup = 32

// makeQXQuants is ggml's make_qx_quants with rmse_type 1, the only kind ggml
// calls it with: it quantizes x (len ≤ maxGroup) to signed levels
// -nmax..nmax-1 for a symmetric scale, stores level+nmax in L, and returns
// the scale. The weights are qw, or x² when qw is nil. The scale search
// tries 19 inverse scales around -nmax/max (max = the value of largest
// magnitude, first one wins) and keeps the one with the best weighted
// least-squares fit. makeQXQuantsGeneric is the plain Go form; on amd64
// with AVX2 makeQXQuants runs the trials on vectors (search_amd64.go), with
// the same result.
//
// Speed-ups of the plain form that keep ggml's result. A trial whose levels
// equal those of the trial before it has the same sums, and then repeats
// that trial's outcome (accepting it again would restore the same scale and
// best), so it is skipped. The level of a value is monotone in is (the
// numerator -(nmax + 0.1f·is), its quotient by max, the product with the
// value and the rounding are each monotone), so a value whose levels at
// is = -9 and is = 9 are equal has that level in every trial and is not
// computed again, and a value whose unclamped levels there both lie in
// [-nmax, nmax-1] never needs the clamp; for Q6_K's groups of 16 that
// leaves about 12 values to requantize per trial, most without the clamp.
// The 18 divisions are made before the trials, so that they overlap, and L
// is filled once, from the inverse scale of the last trial accepted.
func makeQXQuantsGeneric(nmax int, x []float32, L []int8, qw []float32) float32 {
	n := len(x)
	L = L[:n]
	maxv, amax := qxMax(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	var wbuf, wxbuf [maxGroup]float32
	w, wx := qxWeights(x, qw, &wbuf, &wxbuf)
	iscales := qxIScales(nmax, maxv)
	lo, hi := int32(-nmax), int32(nmax-1)
	iscale := float32(-nmax) / maxv
	// lv holds the current levels; free and clamped list the values whose
	// level moves between trials, without and with the clamp, by index
	// into x and value.
	var cur [maxGroup]int32
	lv := cur[:n]
	var freeI, clampI [maxGroup]uint8
	var freeX, clampX [maxGroup]float32
	nfree, nclamp := 0, 0
	for i, v := range x {
		a := nearestInt(float32(iscales[0] * v))
		b := nearestInt(float32(iscales[17] * v))
		lv[i] = min(hi, max(lo, nearestInt(float32(iscale*v)))) // MAX(-nmax, MIN(nmax-1, l))
		switch {
		case a == b:
		case min(a, b) >= lo && max(a, b) <= hi:
			freeI[nfree], freeX[nfree] = uint8(i), v
			nfree++
		case min(hi, max(lo, a)) != min(hi, max(lo, b)):
			clampI[nclamp], clampX[nclamp] = uint8(i), v
			nclamp++
		}
	}
	fI, fX := freeI[:nfree], freeX[:nfree]
	cI, cX := clampI[:nclamp], clampX[:nclamp]
	var sumlx, suml2 float32
	for i, l := range lv {
		fl := float32(l)
		sumlx += float32(wx[i] * fl)
		suml2 += float32(float32(w[i]*fl) * fl)
	}
	chosen := iscale
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	for _, iscale := range iscales {
		var changed int32
		for j, v := range fX {
			i := fI[j] & (maxGroup - 1)
			l := nearestInt(float32(iscale * v))
			changed |= l ^ cur[i]
			cur[i] = l
		}
		for j, v := range cX {
			i := cI[j] & (maxGroup - 1)
			l := min(hi, max(lo, nearestInt(float32(iscale*v))))
			changed |= l ^ cur[i]
			cur[i] = l
		}
		if changed == 0 {
			continue
		}
		sumlx, suml2 = 0, 0
		for i, l := range lv {
			fl := float32(l)
			sumlx += float32(wx[i] * fl)
			suml2 += float32(float32(w[i]*fl) * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			chosen = iscale
			scale = sumlx / suml2
			best = float32(scale * sumlx)
		}
	}
	qxFill(L, x, chosen, nmax)
	return scale
}

// qxSearch8Generic is qxSearch8 in plain Go: makeQXQuants on each of the
// eight groups of n values of x, with weights qw in the same layout (nil:
// x²).
func qxSearch8Generic(nmax int, x []float32, n int, L []int8, qw []float32, scales []float32) {
	for j := range 8 {
		var w []float32
		if qw != nil {
			w = qw[n*j : n*(j+1)]
		}
		scales[j] = makeQXQuantsGeneric(nmax, x[n*j:n*(j+1)], L[n*j:], w)
	}
}

// qxMax returns make_qx_quants' max (the value of largest magnitude, the
// first one on ties) and amax = |max|.
func qxMax(x []float32) (maxv, amax float32) {
	for _, v := range x {
		if ax := abs32(v); ax > amax {
			amax, maxv = ax, v
		}
	}
	return maxv, amax
}

// qxWeights returns make_qx_quants' weights w (qw, or x² when qw is nil)
// and wx[i] = w[i]·x[i], both of len(x), the latter two in the buffers
// given. They are the same in every trial, and ggml's w*x[i]*l rounds
// w*x[i] first, so computing wx once changes nothing.
func qxWeights(x, qw []float32, wbuf, wxbuf *[maxGroup]float32) (w, wx []float32) {
	n := len(x)
	w, wx = wbuf[:n], wxbuf[:n]
	if qw != nil {
		w = qw[:n]
	} else {
		for i, v := range x {
			w[i] = float32(v * v)
		}
	}
	for i, v := range x {
		wx[i] = float32(w[i] * v)
	}
	return w, wx
}

// qxIScales returns the inverse scales of make_qx_quants' loop over
// is = -9..9 without 0, in that order: -(nmax + 0.1f·is)/max.
func qxIScales(nmax int, maxv float32) [18]float32 {
	var s [18]float32
	for k := range s {
		is := k - 9
		if k >= 9 {
			is = k - 8
		}
		s[k] = -(float32(nmax) + float32(0.1*float32(is))) / maxv
	}
	return s
}

// qxFill stores in L the levels of the inverse scale iscale, plus nmax.
func qxFill(L []int8, x []float32, iscale float32, nmax int) {
	L = L[:len(x)]
	lo, hi := int32(-nmax), int32(nmax-1)
	for i, v := range x {
		L[i] = int8(min(hi, max(lo, nearestInt(float32(iscale*v)))) + int32(nmax))
	}
}

// makeQ3Quants is ggml's make_q3_quants with do_rmse set (its only use, by
// Q3_K without an imatrix): levels -nmax..nmax-1 from the scale -nmax/max,
// then up to five rounds of moving single levels while that improves the
// x²-weighted fit. L receives level+nmax; the fitted scale is returned.
func makeQ3Quants(nmax int, x []float32, L []int8) float32 {
	n := len(x)
	L = L[:n]
	maxv := absMaxSigned(x) // x is a block of the finite input
	if abs32(maxv) < groupMaxEps {
		clear(L)
		return 0
	}
	lo, hi := int32(-nmax), int32(nmax-1)
	iscale := float32(-nmax) / maxv
	var sumlx, suml2 float32
	for i, v := range x {
		l := min(hi, max(lo, nearestInt(float32(iscale*v))))
		L[i] = int8(l)
		w := float32(v * v)
		fl := float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for range 5 {
		changed := false
		for i, v := range x {
			w := float32(v * v)
			fl := float32(L[i])
			slx := sumlx - float32(float32(w*v)*fl)
			if !(slx > 0) { // as C's `if (slx > 0)`, false for NaN too
				continue
			}
			sl2 := suml2 - float32(float32(w*fl)*fl)
			newL := min(hi, max(lo, nearestInt(float32(v*sl2)/slx)))
			if newL == int32(L[i]) {
				continue
			}
			fnew := float32(newL)
			slx += float32(float32(w*v) * fnew)
			sl2 += float32(float32(w*fnew) * fnew)
			if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
				L[i] = int8(newL)
				sumlx, suml2 = slx, sl2
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	for i := range L {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// q3Search8Generic is q3Search8 in plain Go: makeQ3Quants on each of the
// eight groups of 16 of x.
func q3Search8Generic(nmax int, x []float32, L []int8, scales []float32) {
	for j := range 8 {
		scales[j] = makeQ3Quants(nmax, x[16*j:16*(j+1)], L[16*j:])
	}
}

// makeQKXQuants is ggml's make_qkx2_quants and make_qkx3_quants, which are
// the same search once weights are given (make_qkx3_quants only adds an x²
// fallback for NULL weights, which no caller uses, and tests max <= min where
// make_qkx2_quants tests max == min, the same thing for finite x since
// min ≤ 0 is clamped below max). It fits x ≈ scale·L + min with L in 0..nmax
// and min ≤ 0: a first guess from the range, then nstep+1 (nstep ≥ 1)
// inverse scales (rmin + rdelta·is + nmax)/(max - min), each followed by a
// weighted least-squares solve for scale and min; the fit with the lowest
// weighted error (absolute when useMAD, else squared) wins. L receives the
// levels; Laux (len ≥ len(x), len(x) ≤ maxGroup) is scratch. It returns the
// scale and -min.
//
// Speed-up that keeps ggml's result: a trial whose levels and min equal
// those of the trial before it has the same sums, fit and error, which
// cannot beat the best error again (it either is the best or lost to it),
// so it is skipped. qkxSearch8 runs the search on eight groups at once.
func makeQKXQuants(nmax int, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMAD bool) (scale, negMin float32) {
	n := len(x)
	weights, L, Laux = weights[:n], L[:n], Laux[:n]
	minv, maxv, sumW, sumX, scale, bestErr, done := qkxStart(nmax, x, weights, L, useMAD)
	if done {
		return 0, -minv
	}
	fnmax := float32(nmax)
	inmax := int32(nmax)
	havePrev := false
	var prevMin uint32
	for is := 0; is <= nstep; is++ {
		// min moves with each accepted fit and ggml recomputes max - min
		// (and x - min) with it: the search is not over a fixed range.
		iscale := (float32(rmin+float32(rdelta*float32(is))) + fnmax) / (maxv - minv)
		changed := qkxLevels(Laux, x, minv, iscale, inmax)
		if havePrev && changed == 0 && math.Float32bits(minv) == prevMin {
			continue
		}
		havePrev, prevMin = true, math.Float32bits(minv)
		sumL, sumL2, sumXL := qkxSums(Laux, weights, x)
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
		var curErr float32
		if useMAD {
			curErr = qkxMAD(Laux, weights, x, thisScale, thisMin)
		} else {
			curErr = qkxMSE(Laux, weights, x, thisScale, thisMin)
		}
		if curErr < bestErr {
			copy(L, Laux)
			bestErr = curErr
			scale, minv = thisScale, thisMin
		}
	}
	return scale, -minv
}

// qkxParams are the search parameters of makeQKXQuants: inverse scales
// (rmin + rdelta·is + nmax)/(max - min) for is = 0..nstep, and the absolute
// error when useMAD is set.
type qkxParams struct {
	rmin, rdelta float32
	nstep        int
	useMAD       bool
}

// qkxMaxTrials bounds nstep+1 for qkxSearch8's vector form: Q2_K, Q4_K and
// Q5_K with weights and the weighted Q4_1 and Q5_1 take 37 trials, the most
// of any caller.
const qkxMaxTrials = 37

// qkxSearch8Generic is qkxSearch8 in plain Go: makeQKXQuants on each of
// the eight groups of n values of x, with weights w in the same layout.
func qkxSearch8Generic(nmax int, x []float32, n int, w []float32, L []uint8, p qkxParams, scales, mins []float32) {
	var Laux [maxGroup]uint8
	for j := range 8 {
		g := x[n*j : n*(j+1)]
		scales[j], mins[j] = makeQKXQuants(nmax, g, w[n*j:n*(j+1)], L[n*j:], Laux[:], p.rmin, p.rdelta, p.nstep, p.useMAD)
	}
}

// qkxStart is makeQKXQuants up to its loop over the inverse scales: the
// range (min clamped to at most 0), Σw and Σw·x, the first guess nmax/(max -
// min) with its levels in L and its error. done reports that max == min; L
// is cleared then and the scale is 0.
func qkxStart(nmax int, x, weights []float32, L []uint8, useMAD bool) (minv, maxv, sumW, sumX, scale, bestErr float32, done bool) {
	n := len(x)
	weights, L = weights[:n], L[:n]
	minv, maxv = x[0], x[0]
	sumW = weights[0]
	sumX = float32(sumW * x[0])
	for i := 1; i < n; i++ {
		v := x[i]
		if v < minv {
			minv = v
		}
		if v > maxv {
			maxv = v
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * v)
	}
	if minv > 0 {
		minv = 0
	}
	if maxv == minv {
		clear(L)
		return minv, maxv, sumW, sumX, 0, 0, true
	}
	inmax := int32(nmax)
	iscale := float32(nmax) / (maxv - minv)
	scale = 1 / iscale
	for i, v := range x {
		l := uint8(min(inmax, max(0, nearestInt(float32(iscale*(v-minv))))))
		L[i] = l
		diff := float32(float32(scale*float32(l))+minv) - v
		if useMAD {
			diff = abs32(diff)
		} else {
			diff = float32(diff * diff)
		}
		bestErr += float32(weights[i] * diff)
	}
	return minv, maxv, sumW, sumX, scale, bestErr, false
}

// The inner loops of makeQKXQuants, kept out of line so that each gets the
// registers to itself.

// qkxLevels sets L[i] = clamp(nearest_int(iscale·(x[i]-minv)), 0, nmax) and
// returns a non-zero value if any level changed.
//
//go:noinline
func qkxLevels(L []uint8, x []float32, minv, iscale float32, nmax int32) (changed uint8) {
	L = L[:len(x)]
	for i, v := range x {
		l := uint8(min(nmax, max(0, nearestInt(float32(iscale*(v-minv))))))
		changed |= l ^ L[i]
		L[i] = l
	}
	return changed
}

// qkxSums returns Σw·l, Σw·l·l and Σw·l·x in ggml's order.
//
//go:noinline
func qkxSums(L []uint8, w, x []float32) (sumL, sumL2, sumXL float32) {
	L, w = L[:len(x)], w[:len(x)]
	for i, v := range x {
		f := float32(L[i])
		wl := float32(w[i] * f)
		sumL += wl
		sumL2 += float32(wl * f)
		sumXL += float32(wl * v)
	}
	return sumL, sumL2, sumXL
}

// qkxMSE returns Σw·(scale·l + min - x)².
//
//go:noinline
func qkxMSE(L []uint8, w, x []float32, scale, minv float32) (e float32) {
	L, w = L[:len(x)], w[:len(x)]
	for i, v := range x {
		diff := float32(float32(scale*float32(L[i]))+minv) - v
		e += float32(w[i] * float32(diff*diff))
	}
	return e
}

// qkxMAD returns Σw·|scale·l + min - x|.
//
//go:noinline
func qkxMAD(L []uint8, w, x []float32, scale, minv float32) (e float32) {
	L, w = L[:len(x)], w[:len(x)]
	for i, v := range x {
		diff := float32(float32(scale*float32(L[i]))+minv) - v
		e += float32(w[i] * abs32(diff))
	}
	return e
}
