package quantize

import (
	"math"
	"math/rand/v2"
	"testing"
)

// qxTestGroup returns a group of n values for the make_qx_quants searches:
// Gaussian, with repeated values and signed zeros (ties of the maximum and
// levels that round to zero from either side), or at extreme magnitudes.
func qxTestGroup(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	scale := math.Pow(10, float64(r.IntN(60)-30))
	for i := range x {
		switch r.IntN(8) {
		case 0:
			x[i] = float32(r.IntN(5) - 2)
		case 1:
			x[i] = math.Float32frombits(uint32(r.IntN(2)) << 31)
		case 2:
			x[i] = float32(float64(r.IntN(9)-4) * 0.25 * scale)
		default:
			x[i] = float32(r.NormFloat64() * scale)
		}
	}
	return x
}

// makeQXQuantsRef is make_qx_quants (rmse_type 1) line by line, every
// trial computed in full: the plain form the searches are checked against.
func makeQXQuantsRef(nmax int, x []float32, L []int8, qw []float32) float32 {
	var maxv, amax float32
	for _, v := range x {
		if ax := abs32(v); ax > amax {
			amax, maxv = ax, v
		}
	}
	if amax < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	weight := func(i int) float32 {
		if qw != nil {
			return qw[i]
		}
		return float32(x[i] * x[i])
	}
	level := func(iscale, v float32) int32 {
		return max(int32(-nmax), min(int32(nmax-1), nearestInt(float32(iscale*v))))
	}
	iscale := float32(-nmax) / maxv
	var sumlx, suml2 float32
	for i, v := range x {
		l := level(iscale, v)
		L[i] = int8(l + int32(nmax))
		w := weight(i)
		sumlx += float32(float32(w*v) * float32(l))
		suml2 += float32(float32(w*float32(l)) * float32(l))
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(float32(nmax) + float32(0.1*float32(is))) / maxv
		sumlx, suml2 = 0, 0
		for i, v := range x {
			l := level(iscale, v)
			w := weight(i)
			sumlx += float32(float32(w*v) * float32(l))
			suml2 += float32(float32(w*float32(l)) * float32(l))
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, v := range x {
				L[i] = int8(level(iscale, v) + int32(nmax))
			}
			scale = sumlx / suml2
			best = float32(scale * sumlx)
		}
	}
	return scale
}

// TestMakeQXQuantsGeneric compares the plain Go search, with its skipped
// trials and values, with make_qx_quants computed in full, on every nmax
// ggml uses, with and without weights: same scale bits, same levels.
func TestMakeQXQuantsGeneric(t *testing.T) {
	compareMakeQXQuants(t, rand.New(rand.NewPCG(8, 88)), "plain", makeQXQuantsGeneric, "full", makeQXQuantsRef)
}

// compareMakeQXQuants runs two implementations of make_qx_quants on the
// same random groups (16 or 32 values, every nmax, weights or none, some
// zero weights) and fails at the first difference of scale bits or levels.
func compareMakeQXQuants(t *testing.T, r *rand.Rand, gotName string, got func(int, []float32, []int8, []float32) float32,
	wantName string, want func(int, []float32, []int8, []float32) float32) {
	t.Helper()
	for it := range 300000 {
		n := []int{16, 32}[r.IntN(2)]
		nmax := []int{4, 8, 16, 32}[r.IntN(4)]
		x := qxTestGroup(r, n)
		var qw []float32
		if r.IntN(2) == 0 {
			qw = make([]float32, n)
			for i := range qw {
				qw[i] = float32(r.ExpFloat64())
				if r.IntN(10) == 0 {
					qw[i] = 0
				}
			}
		}
		var L1, L2 [maxGroup]int8
		w := want(nmax, x, L1[:], qw)
		g := got(nmax, x, L2[:], qw)
		if math.Float32bits(g) != math.Float32bits(w) || L1 != L2 {
			t.Fatalf("iter %d nmax %d x %v qw %v:\n%-5s %v %v\n%-5s %v %v", it, nmax, x, qw, gotName, g, L2[:n], wantName, w, L1[:n])
		}
	}
}

// makeQKXQuantsRef is make_qkx2_quants line by line, every trial computed
// in full: the plain form makeQKXQuants is checked against.
func makeQKXQuantsRef(nmax int, x, weights []float32, L []uint8, rmin, rdelta float32, nstep int, useMAD bool) (float32, float32) {
	n := len(x)
	var Laux [maxGroup]uint8
	minv, maxv := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < minv {
			minv = x[i]
		}
		if x[i] > maxv {
			maxv = x[i]
		}
		sumW += weights[i]
		sumX += float32(weights[i] * x[i])
	}
	if minv > 0 {
		minv = 0
	}
	if maxv == minv {
		clear(L[:n])
		return 0, -minv
	}
	level := func(iscale, v, minv float32) uint8 {
		return uint8(max(0, min(int32(nmax), nearestInt(float32(iscale*(v-minv))))))
	}
	errOf := func(l []uint8, scale, minv float32) float32 {
		var e float32
		for i, v := range x {
			diff := float32(float32(scale*float32(l[i]))+minv) - v
			if useMAD {
				diff = abs32(diff)
			} else {
				diff = float32(diff * diff)
			}
			e += float32(weights[i] * diff)
		}
		return e
	}
	iscale := float32(nmax) / (maxv - minv)
	scale := 1 / iscale
	for i, v := range x {
		L[i] = level(iscale, v, minv)
	}
	bestErr := errOf(L, scale, minv)
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + float32(nmax)) / (maxv - minv)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := level(iscale, v, minv)
			Laux[i] = l
			wl := float32(weights[i] * float32(l))
			sumL += wl
			sumL2 += float32(wl * float32(l))
			sumXL += float32(wl * v)
		}
		d := float32(sumW*sumL2) - float32(sumL*sumL)
		if d > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / d
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / d
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			if e := errOf(Laux[:n], thisScale, thisMin); e < bestErr {
				copy(L, Laux[:n])
				bestErr = e
				scale, minv = thisScale, thisMin
			}
		}
	}
	return scale, -minv
}

// TestMakeQKXQuants compares makeQKXQuants, with its skipped trials, with
// make_qkx2_quants computed in full, on the parameters ggml's callers use:
// same scale and min bits, same levels.
func TestMakeQKXQuants(t *testing.T) {
	type params struct {
		nmax, n      int
		rmin, rdelta float32
		nstep        int
		mad          bool
	}
	ps := []params{
		{3, 16, -0.5, 0.1, 15, true}, {3, 16, -0.9, 0.05, 36, false}, {15, 32, -1, 0.1, 20, false},
		{31, 32, -0.5, 0.1, 15, false}, {15, 32, -0.9, 0.05, 36, false}, {31, 32, -0.9, 0.05, 36, false},
	}
	r := rand.New(rand.NewPCG(9, 99))
	for it := range 100000 {
		p := ps[r.IntN(len(ps))]
		x := qxTestGroup(r, p.n)
		w := make([]float32, p.n)
		for i := range w {
			w[i] = float32(r.ExpFloat64())
			if r.IntN(3) == 0 {
				w[i] = float32(x[i] * x[i])
			}
		}
		var L1, L2, Laux [maxGroup]uint8
		s1, m1 := makeQKXQuantsRef(p.nmax, x, w, L1[:], p.rmin, p.rdelta, p.nstep, p.mad)
		s2, m2 := makeQKXQuants(p.nmax, x, w, L2[:], Laux[:], p.rmin, p.rdelta, p.nstep, p.mad)
		if math.Float32bits(s1) != math.Float32bits(s2) || math.Float32bits(m1) != math.Float32bits(m2) || L1 != L2 {
			t.Fatalf("iter %d %+v x %v w %v:\ngot  %v %v %v\nwant %v %v %v", it, p, x, w, s2, m2, L2[:p.n], s1, m1, L1[:p.n])
		}
	}
}
