//go:build !purego

package quantize

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMakeQXQuantsAVX2 compares the vector search with the plain one on
// every nmax ggml uses, with and without weights: same scale bits, same
// levels.
func TestMakeQXQuantsAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	compareMakeQXQuants(t, rand.New(rand.NewPCG(7, 77)), "AVX2", makeQXQuantsAVX2, "plain", makeQXQuantsGeneric)
}

// TestQKXSearch8AVX2 compares the vector search of eight groups with the
// plain one on the parameters of Q2_K, Q4_K and Q5_K with and without
// weights and of the weighted Q4_1 and Q5_1, on the test groups of
// make_qx_quants (zeros of both signs, tiny and huge scales, repeated
// values), on constant groups (max == min), and on groups whose fitted min
// can come close to their max (values near a negative constant beside an
// outlier), where iscale·(x-min) leaves RoundToEven's exact range and the
// groups go to the plain search.
func TestQKXSearch8AVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	type params struct {
		nmax, n int
		p       qkxParams
	}
	ps := []params{
		{3, 16, qkxParams{-0.5, 0.1, 15, true}}, {3, 16, qkxParams{-0.9, 0.05, 36, false}},
		{15, 32, qkxParams{-1, 0.1, 20, false}}, {31, 32, qkxParams{-0.5, 0.1, 15, false}},
		{15, 32, qkxParams{-0.9, 0.05, 36, false}}, {31, 32, qkxParams{-0.9, 0.05, 36, false}},
	}
	r := rand.New(rand.NewPCG(10, 1010))
	iters := 30000
	if testing.Short() {
		iters = 3000
	}
	for it := range iters {
		p := ps[r.IntN(len(ps))]
		n := p.n
		x := make([]float32, 8*n)
		w := make([]float32, 8*n)
		for j := range 8 {
			xs := x[n*j : n*(j+1)]
			switch r.IntN(6) {
			case 0:
				c := -float32(r.ExpFloat64())
				for i := range xs {
					xs[i] = c * (1 + float32(r.NormFloat64())*1e-6)
				}
				xs[r.IntN(n)] = c * float32(1+r.IntN(1e6))
			case 1:
				c := float32(r.NormFloat64())
				if r.IntN(2) == 0 {
					c = 0
				}
				for i := range xs {
					xs[i] = c
				}
			default:
				copy(xs, qxTestGroup(r, n))
			}
			for i, v := range xs {
				w[n*j+i] = float32(r.ExpFloat64())
				switch r.IntN(6) {
				case 0:
					w[n*j+i] = float32(v * v)
				case 1:
					w[n*j+i] = 0
				}
			}
		}
		L1, L2 := make([]uint8, 8*n), make([]uint8, 8*n)
		var s1, m1, s2, m2 [8]float32
		qkxSearch8Generic(p.nmax, x, n, w, L1, p.p, s1[:], m1[:])
		qkxSearch8(p.nmax, x, n, w, L2, p.p, s2[:], m2[:])
		for j := range 8 {
			g := func(v []uint8) []uint8 { return v[n*j : n*(j+1)] }
			if math.Float32bits(s1[j]) != math.Float32bits(s2[j]) || math.Float32bits(m1[j]) != math.Float32bits(m2[j]) || !slices.Equal(g(L1), g(L2)) {
				t.Fatalf("iter %d %+v group %d x %v w %v:\nAVX2  %v %v %v\nplain %v %v %v", it, p, j,
					x[n*j:n*(j+1)], w[n*j:n*(j+1)], s2[j], m2[j], g(L2), s1[j], m1[j], g(L1))
			}
		}
	}
}

// TestQXSearch8AVX2 compares the vector search of eight groups with the
// plain one on groups of 16 and 32, every nmax ggml uses, with and without
// weights, on the test groups of make_qx_quants and on all-zero and tiny
// groups (below GROUP_MAX_EPS).
func TestQXSearch8AVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(12, 1212))
	iters := 40000
	if testing.Short() {
		iters = 4000
	}
	for it := range iters {
		n := []int{16, 32}[r.IntN(2)]
		nmax := []int{4, 8, 16, 32}[r.IntN(4)]
		x := testGroups8(r, n)
		var qw []float32
		if r.IntN(2) == 0 {
			qw = make([]float32, 8*n)
			for i := range qw {
				qw[i] = float32(r.ExpFloat64())
				if r.IntN(10) == 0 {
					qw[i] = 0
				}
			}
		}
		L1, L2 := make([]int8, 8*n), make([]int8, 8*n)
		var s1, s2 [8]float32
		qxSearch8Generic(nmax, x, n, L1, qw, s1[:])
		qxSearch8(nmax, x, n, L2, qw, s2[:])
		for j := range 8 {
			if math.Float32bits(s1[j]) != math.Float32bits(s2[j]) || !slices.Equal(L1[n*j:n*(j+1)], L2[n*j:n*(j+1)]) {
				t.Fatalf("iter %d n %d nmax %d group %d x %v:\nAVX2  %v %v\nplain %v %v", it, n, nmax, j, x[n*j:n*(j+1)],
					s2[j], L2[n*j:n*(j+1)], s1[j], L1[n*j:n*(j+1)])
			}
		}
	}
}

// TestQ3Search8AVX2 compares the vector make_q3_quants of eight groups with
// the plain one on the test groups of make_qx_quants and on all-zero and
// tiny groups (below GROUP_MAX_EPS), with Q3_K's nmax and others.
func TestQ3Search8AVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(13, 1313))
	iters := 40000
	if testing.Short() {
		iters = 4000
	}
	for it := range iters {
		nmax := []int{4, 4, 8, 16}[r.IntN(4)]
		x := testGroups8(r, 16)
		L1, L2 := make([]int8, 128), make([]int8, 128)
		var s1, s2 [8]float32
		q3Search8Generic(nmax, x, L1, s1[:])
		q3Search8(nmax, x, L2, s2[:])
		for j := range 8 {
			if math.Float32bits(s1[j]) != math.Float32bits(s2[j]) || !slices.Equal(L1[16*j:16*(j+1)], L2[16*j:16*(j+1)]) {
				t.Fatalf("iter %d nmax %d group %d x %v:\nAVX2  %v %v\nplain %v %v", it, nmax, j, x[16*j:16*(j+1)],
					s2[j], L2[16*j:16*(j+1)], s1[j], L1[16*j:16*(j+1)])
			}
		}
	}
}

// testGroups8 returns eight groups of n values: test groups of
// make_qx_quants, all-zero groups (zeros of both signs) and groups below
// GROUP_MAX_EPS.
func testGroups8(r *rand.Rand, n int) []float32 {
	x := make([]float32, 8*n)
	for j := range 8 {
		g := x[n*j : n*(j+1)]
		switch r.IntN(8) {
		case 0:
			for i := range g {
				g[i] = float32(r.NormFloat64() * 1e-16)
			}
		case 1:
			for i := range g {
				g[i] = math.Float32frombits(uint32(r.IntN(2)) << 31)
			}
		default:
			copy(g, qxTestGroup(r, n))
		}
	}
	return x
}
