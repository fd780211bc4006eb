//go:build !purego

package quantize

import (
	"math"
	"math/rand/v2"
	"testing"
)

// iq1TestSums fills p[0..n] with prefix sums of n random terms drawn by
// kind: Gaussian, repeated values (ties between candidates), or zeros.
func iq1TestSums(r *rand.Rand, p []float32, n, kind int, scale float64) {
	p[0] = 0
	v := float32(r.NormFloat64() * scale)
	for i := 1; i <= n; i++ {
		t := float32(r.NormFloat64() * scale)
		switch kind {
		case 1:
			t = v
		case 2:
			if r.IntN(2) == 0 {
				t = 0
			}
		}
		p[i] = p[i-1] + t
	}
}

// TestIQ1SearchAVX2 compares the batched split searches of IQ1_M and IQ1_S
// with their plain Go forms on random prefix sums: Gaussian at scales from
// 1e-20 to 1e20 (overflow to infinity included), repeated terms whose
// candidates tie, and sparse ones.
func TestIQ1SearchAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(18, 1818))
	var outcomes, outcomesS [3]int // iq1PickAVX2: decided, no candidate, undecided
	for iter := range 20000 {
		kind := iter % 3
		scale := math.Pow(10, float64(r.IntN(41)-20))
		var m, mg iq1mSearch
		for row := range 4 {
			iq1TestSums(r, m.tab[row][:], 16, kind, scale)
		}
		if iter%2 == 0 { // the weights' sums positive, as the encoder's are
			for row := 2; row < 4; row++ {
				for i := range 17 {
					m.tab[row][i] = abs32(m.tab[row][i])
				}
			}
		}
		for h := range 2 {
			m.txp[h] = float32(m.tab[h][16] * iq1XP[2])
			m.txm[h] = float32(m.tab[h][16] * iq1XM[2])
			m.twp[h] = float32(float32(m.tab[2+h][16]*iq1XP[2]) * iq1XP[2])
			m.twm[h] = float32(float32(m.tab[2+h][16]*iq1XM[2]) * iq1XM[2])
		}
		mg = m
		m.run(1)
		mg.runGeneric(1)
		if m.besti1 != mg.besti1 || m.besti2 != mg.besti2 || m.bestK != mg.bestK || math.Float32bits(m.scale) != math.Float32bits(mg.scale) {
			t.Fatalf("IQ1_M iter %d: kernel (%d, %d, %d, %g), Go (%d, %d, %d, %g)", iter,
				m.besti1, m.besti2, m.bestK, m.scale, mg.besti1, mg.besti2, mg.bestK, mg.scale)
		}
		// The candidate-by-candidate kernel on its own (run uses it only
		// where iq1mBestAVX2 cannot decide), and how often that happens.
		lanes := m.lanes()
		iq1mBestAVX2(&m.tab, &lanes, &m.buf)
		switch w := iq1PickAVX2(&m.buf[0], 32*iq1mVecs); {
		case w >= 0:
			outcomes[0]++
		default:
			outcomes[-w]++
		}
		i1, i2, k, sc := iq1mSearchAVX2(&m.tab, &lanes)
		if k < 0 {
			i1, i2, sc = -1, -1, 1
		}
		if i1 != mg.besti1 || i2 != mg.besti2 || k != mg.bestK || math.Float32bits(sc) != math.Float32bits(mg.scale) {
			t.Fatalf("IQ1_M iter %d: scan kernel (%d, %d, %d, %g), Go (%d, %d, %d, %g)", iter,
				i1, i2, k, sc, mg.besti1, mg.besti2, mg.bestK, mg.scale)
		}

		var s, sg iq1sSearch
		iq1TestSums(r, s.tab[0][:], 32, kind, scale)
		iq1TestSums(r, s.tab[1][:], 32, kind, scale)
		if iter%2 == 0 {
			for i := range 33 {
				s.tab[1][i] = abs32(s.tab[1][i])
			}
		}
		sg = s
		ss := s
		s.run(1)
		sg.runGeneric(1)
		ss.runScan(1)
		for _, k := range []*iq1sSearch{&s, &ss} {
			if k.besti1 != sg.besti1 || k.besti2 != sg.besti2 || k.bestShift != sg.bestShift || math.Float32bits(k.scale) != math.Float32bits(sg.scale) {
				t.Fatalf("IQ1_S iter %d: kernel (%d, %d, %d, %g), Go (%d, %d, %d, %g)", iter,
					k.besti1, k.besti2, k.bestShift, k.scale, sg.besti1, sg.besti2, sg.bestShift, sg.scale)
			}
		}
		switch w := iq1PickAVX2(&s.buf[0], 32*iq1sVecs); {
		case w >= 0:
			outcomesS[0]++
		default:
			outcomesS[-w]++
		}
	}
	t.Logf("IQ1_M: %d decided, %d without a candidate, %d undecided", outcomes[0], outcomes[1], outcomes[2])
	t.Logf("IQ1_S: %d decided, %d without a candidate, %d undecided", outcomesS[0], outcomesS[1], outcomesS[2])
	for i := range 3 {
		if outcomes[i] == 0 || outcomesS[i] == 0 {
			t.Errorf("iq1PickAVX2 outcome %d never seen", i)
		}
	}
}

// TestIQ1RankAVX2 compares the rank sorts of 16 and 32 values with the
// insertion sort: Gaussian values, values drawn from a few (ties), zeros of
// both signs, infinities, denormals; a NaN anywhere must leave the order to
// the insertion sort.
func TestIQ1RankAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(18, 1820))
	few := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1e-45, -1e-45, float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32}
	for iter := range 100000 {
		var xb [32]float32
		for i := range xb {
			xb[i] = float32(r.NormFloat64())
			if iter%2 == 1 {
				xb[i] = few[r.IntN(2+iter%(len(few)-1))]
			}
		}
		n := 16 << (iter / 2 % 2)
		nan := iter%7 == 0
		if nan {
			xb[r.IntN(n)] = float32(math.NaN())
		}
		var got, want [32]uint8
		got[0] = 99
		var ok bool
		if n == 16 {
			ok = iq1Rank16AVX2((*[16]float32)(xb[:16]), (*[16]uint8)(got[:16]))
		} else {
			ok = iq1Rank32AVX2(&xb, &got)
		}
		if ok == nan || (nan && got[0] != 99) {
			t.Fatalf("iter %d: ok %v with NaN %v (%v)", iter, ok, nan, xb[:n])
		}
		if nan {
			continue
		}
		iq1SortOrder(want[:n], xb[:n])
		if got != want {
			t.Fatalf("iter %d: %v: ranks %v, insertion sort %v", iter, xb[:n], got[:n], want[:n])
		}
	}
}

// TestIQ1BoundaryPairs checks the vector counts the kernels are built for.
func TestIQ1BoundaryPairs(t *testing.T) {
	if len(iq1mVectors) != iq1mVecs || len(iq1sVectors) != iq1sVecs {
		t.Fatalf("%d and %d vectors, want %d and %d", len(iq1mVectors), len(iq1sVectors), iq1mVecs, iq1sVecs)
	}
}
