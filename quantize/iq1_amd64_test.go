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

		var s, sg iq1sSearch
		iq1TestSums(r, s.tab[0][:], 32, kind, scale)
		iq1TestSums(r, s.tab[1][:], 32, kind, scale)
		if iter%2 == 0 {
			for i := range 33 {
				s.tab[1][i] = abs32(s.tab[1][i])
			}
		}
		sg = s
		s.run(1)
		sg.runGeneric(1)
		if s.besti1 != sg.besti1 || s.besti2 != sg.besti2 || s.bestShift != sg.bestShift || math.Float32bits(s.scale) != math.Float32bits(sg.scale) {
			t.Fatalf("IQ1_S iter %d: kernel (%d, %d, %d, %g), Go (%d, %d, %d, %g)", iter,
				s.besti1, s.besti2, s.bestShift, s.scale, sg.besti1, sg.besti2, sg.bestShift, sg.scale)
		}
	}
}
