//go:build goexperiment.simd && amd64

package quantize

import (
	"math"
	"math/rand/v2"
	"simd/archsimd"
	"testing"
)

// TestMakeQXQuantsAVX2 compares the vector search with the plain one on
// every nmax ggml uses, with and without weights: same scale bits, same
// levels.
func TestMakeQXQuantsAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	compareMakeQXQuants(t, rand.New(rand.NewPCG(7, 77)), "AVX2", makeQXQuantsAVX2, "plain", makeQXQuantsGeneric)
}

// TestMakeQKXQuantsAVX compares the vector squared-error search with the
// plain one on the parameters of Q4_K, Q5_K and the weighted Q4_1 and Q5_1,
// on the test groups of make_qx_quants and on groups whose fitted min can
// come close to their max (values near a negative constant beside an
// outlier), where iscale·(x-min) leaves nearest_int's exact range.
func TestMakeQKXQuantsAVX(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	type params struct {
		nmax         int
		rmin, rdelta float32
		nstep        int
	}
	ps := []params{{15, -1, 0.1, 20}, {31, -0.5, 0.1, 15}, {15, -0.9, 0.05, 36}, {31, -0.9, 0.05, 36}}
	r := rand.New(rand.NewPCG(10, 1010))
	for it := range 200000 {
		p := ps[r.IntN(len(ps))]
		x := qxTestGroup(r, qkxVec)
		if it%4 == 0 {
			c := -float32(r.ExpFloat64())
			for i := range x {
				x[i] = c * (1 + float32(r.NormFloat64())*1e-6)
			}
			x[r.IntN(qkxVec)] = c * float32(1+r.IntN(1e6))
		}
		w := make([]float32, qkxVec)
		for i := range w {
			w[i] = float32(r.ExpFloat64())
			if r.IntN(3) == 0 {
				w[i] = float32(x[i] * x[i])
			}
		}
		var L1, L2, Laux [maxGroup]uint8
		s1, m1 := makeQKXQuantsGeneric(p.nmax, x, w, L1[:], Laux[:], p.rmin, p.rdelta, p.nstep, false)
		s2, m2 := makeQKXQuantsAVX(p.nmax, (*[qkxVec]float32)(x), (*[qkxVec]float32)(w), L2[:], p.rmin, p.rdelta, p.nstep)
		if math.Float32bits(s1) != math.Float32bits(s2) || math.Float32bits(m1) != math.Float32bits(m2) || L1 != L2 {
			t.Fatalf("iter %d %+v x %v w %v:\nAVX   %v %v %v\nplain %v %v %v", it, p, x, w, s2, m2, L2[:qkxVec], s1, m1, L1[:qkxVec])
		}
	}
}

// TestQKXLevelsAVX checks the vector levels against nearest_int's, bit for
// bit, also where iscale·(x-min) leaves nearest_int's exact range or is NaN
// and the group falls back to nearest_int's wrapped results.
func TestQKXLevelsAVX(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(11, 1111))
	for it := range 200000 {
		var x [qkxVec]float32
		copy(x[:], qxTestGroup(r, qkxVec))
		var xs [qkxVec / 4]archsimd.Float32x4
		for q := range xs {
			xs[q] = archsimd.LoadFloat32x4((*[4]float32)(x[4*q:]))
		}
		nmax := []int{15, 31}[r.IntN(2)]
		minv := -float32(r.ExpFloat64())
		iscale := float32(r.ExpFloat64() * math.Pow(10, float64(r.IntN(16)-4)))
		switch r.IntN(20) {
		case 0:
			iscale = float32(math.Inf(1))
		case 1:
			x[r.IntN(qkxVec)] = float32(math.NaN())
			for q := range xs {
				xs[q] = archsimd.LoadFloat32x4((*[4]float32)(x[4*q:]))
			}
		}
		var cur [qkxVec]float32
		k := newQKXLevelConsts(nmax)
		qkxLevelsAVX(&cur, &xs, &x, minv, iscale, &k)
		for i, v := range x {
			want := float32(uint8(min(int32(nmax), max(0, nearestInt(float32(iscale*(v-minv)))))))
			if math.Float32bits(cur[i]) != math.Float32bits(want) {
				t.Fatalf("iter %d: x[%d] = %v, min %v, iscale %v: level %v, want %v", it, i, v, minv, iscale, cur[i], want)
			}
		}
	}
}
