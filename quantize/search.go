package quantize

import "math"

// Search helpers shared by several families, ported from ggml-quants.c.

// Group-maximum thresholds below which a group counts as all zero
// (GROUP_MAX_EPS* in ggml-quants.c).
const (
	groupMaxEps       = float32(1e-15)
	groupMaxEpsIQ3XXS = float32(1e-8)
	groupMaxEpsIQ2S   = float32(1e-8)
	groupMaxEpsIQ1M   = float32(1e-7)
	groupMaxEpsIQ1S   = float32(1e-12)
)

// nearestInt is ggml's nearest_int: adding 1.5·2^23 puts the rounded integer
// (round half to even) in the low mantissa bits. ggml asserts |f| ≤ 4194303
// only in debug builds; outside that range it returns the same wrapped bits
// as ggml's release build.
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// bestIndexInt8 is ggml's best_index_int8: the index of the entry of the
// sorted table val closest to x (ties to the lower entry only when strictly
// closer, as in ggml).
func bestIndexInt8(val []int8, x float32) int {
	n := len(val)
	if x <= float32(val[0]) {
		return 0
	}
	if x >= float32(val[n-1]) {
		return n - 1
	}
	ml, mu := 0, n-1
	for mu-ml > 1 {
		mav := (ml + mu) / 2
		if x < float32(val[mav]) {
			mu = mav
		} else {
			ml = mav
		}
	}
	if x-float32(val[mu-1]) < float32(val[mu])-x {
		return mu - 1
	}
	return mu
}

// makeQPQuants is ggml's make_qp_quants: quantizes the non-negative values x
// to 0..nmax with weights qw and returns the scale; L receives the levels.
func makeQPQuants(nmax int, x []float32, L []uint8, qw []float32) float32 {
	n := len(x)
	var max float32
	for _, v := range x {
		if v > max {
			max = v
		}
	}
	if max < groupMaxEps {
		clear(L[:n])
		return 0
	}
	fnmax := float32(nmax)
	iscale := fnmax / max
	for i := range n {
		L[i] = uint8(nearestInt(float32(iscale * x[i])))
	}
	scale := 1 / iscale
	var bestMSE float32
	for i := range n {
		diff := x[i] - float32(scale*float32(L[i]))
		bestMSE += float32(float32(qw[i]*diff) * diff)
	}
	for is := -4; is <= 4; is++ {
		if is == 0 {
			continue
		}
		iscaleIs := (float32(0.1*float32(is)) + fnmax) / max
		scaleIs := 1 / iscaleIs
		var mse float32
		for i := range n {
			l := min(int32(nmax), nearestInt(float32(iscaleIs*x[i])))
			diff := x[i] - float32(scaleIs*float32(l))
			mse += float32(float32(qw[i]*diff) * diff)
		}
		if mse < bestMSE {
			bestMSE = mse
			iscale = iscaleIs
		}
	}
	var sumlx, suml2 float32
	for i := range n {
		l := min(int32(nmax), nearestInt(float32(iscale*x[i])))
		L[i] = uint8(l)
		fl := float32(l) // ggml sums with the int, not the stored byte
		sumlx += float32(float32(qw[i]*x[i]) * fl)
		suml2 += float32(float32(qw[i]*fl) * fl)
	}
	for range 5 {
		changed := 0
		for i := range n {
			w := qw[i]
			fl := float32(L[i])
			slx := sumlx - float32(float32(w*x[i])*fl)
			sl2 := suml2 - float32(float32(w*fl)*fl)
			if slx > 0 && sl2 > 0 {
				newL := min(int32(nmax), nearestInt(float32(x[i]*sl2)/slx))
				if newL != int32(L[i]) {
					fnew := float32(newL)
					slx += float32(float32(w*x[i]) * fnew)
					sl2 += float32(float32(w*fnew) * fnew)
					if float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i] = uint8(newL)
						sumlx, suml2 = slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}
