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
	r := rand.New(rand.NewPCG(8, 88))
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
		want := makeQXQuantsRef(nmax, x, L1[:], qw)
		got := makeQXQuantsGeneric(nmax, x, L2[:], qw)
		if math.Float32bits(got) != math.Float32bits(want) || L1 != L2 {
			t.Fatalf("iter %d nmax %d x %v qw %v:\ngot  %v %v\nwant %v %v", it, nmax, x, qw, got, L2[:n], want, L1[:n])
		}
	}
}
