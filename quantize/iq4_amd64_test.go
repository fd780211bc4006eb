//go:build !purego

package quantize

import (
	"math"
	"math/rand/v2"
	"testing"
)

// iq4TestBlock fills x with a block of 32 values of one of several kinds:
// Gaussian at scales from 1e-30 to 1e30, values whose scaled images fall
// exactly on iq4Bounds, kvaluesIQ4NL entries and their neighbours, zeros
// of both signs; and w with weights, zeros among them, or none (x²).
func iq4TestBlock(r *rand.Rand, x []float32, w *[32]float32) {
	scale := math.Pow(10, float64(r.IntN(61)-30))
	for j := range x {
		switch r.IntN(6) {
		case 0:
			x[j] = math.Float32frombits(uint32(r.IntN(2)) << 31)
		case 1:
			b := iq4Bounds[1+r.IntN(15)]
			x[j] = math.Float32frombits(math.Float32bits(b) + uint32(r.IntN(3)) - 1)
		case 2:
			x[j] = float32(kvaluesIQ4NL[r.IntN(16)])
		default:
			x[j] = float32(r.NormFloat64() * scale)
		}
	}
	for j := range w {
		switch r.IntN(4) {
		case 0:
			w[j] = 0
		case 1:
			w[j] = x[j] * x[j]
		default:
			w[j] = float32(r.ExpFloat64() * scale)
		}
	}
}

// iq4TestID returns an inverse scale for the kernels' tests: 1 (the
// values of iq4TestBlock on the bounds stay there), ±Inf, NaN, or Gaussian
// at scales from 1e-30 to 1e30.
func iq4TestID(r *rand.Rand) float32 {
	switch r.IntN(8) {
	case 0, 1:
		return 1
	case 2:
		return float32(math.Inf(1 - 2*r.IntN(2)))
	case 3:
		return float32(math.NaN())
	}
	return float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(61)-30)))
}

// TestIQ4TrialsPackAVX2 compares the vector sums of the 16 trials with
// iq4Fit's, and the vector indexes with iq4Index's, on random blocks,
// blocks with values on the level bounds, and inverse scales that keep
// them there, that send values beyond the table, infinities and NaN.
func TestIQ4TrialsPackAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(18, 418))
	var x, w [32]float32
	for it := range 20000 {
		iq4TestBlock(r, x[:], &w)
		var ids [16]float32
		for k := range ids {
			ids[k] = iq4TestID(r)
		}
		var got, want [32]float32
		iq4TrialsAVX2(&x[0], &w[0], &ids, &iq4Tables, &got)
		iq4TrialsGeneric(x[:], &w, &ids, &want)
		for k := range got {
			if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
				t.Fatalf("iter %d sum %d (id %v): %v, want %v\nx %v\nw %v", it, k, ids[k%16], got[k], want[k], x, w)
			}
		}
		var gotQ, wantQ [16]byte
		iq4PackAVX2(&gotQ[0], &x[0], ids[0], &iq4Tables)
		iq4PackGeneric(wantQ[:], x[:], ids[0])
		if gotQ != wantQ {
			t.Fatalf("iter %d id %v: indexes %x, want %x\nx %v", it, ids[0], gotQ, wantQ, x)
		}
	}
}

// TestIQ4WeightsAVX2 compares the vector weights and block maximum with
// the plain ones on the blocks of TestIQ4TrialsPackAVX2, on blocks whose
// largest magnitude occurs several times with both signs, on blocks of
// zeros of both signs, with and without importance weights (zeros among
// them) and at sigma2 up to infinity.
func TestIQ4WeightsAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(18, 618))
	var x, qw [32]float32
	for it := range 20000 {
		iq4TestBlock(r, x[:], &qw)
		switch r.IntN(4) {
		case 0: // the largest magnitude several times, both signs
			m := abs32(x[r.IntN(32)])
			for range 1 + r.IntN(4) {
				x[r.IntN(32)] = m * float32(1-2*r.IntN(2))
			}
		case 1:
			for j := range x {
				x[j] = math.Float32frombits(uint32(r.IntN(2)) << 31)
			}
		}
		sigma2 := float32(r.ExpFloat64() * math.Pow(10, float64(r.IntN(81)-40)))
		if r.IntN(8) == 0 {
			sigma2 = float32(math.Inf(1))
		}
		var q []float32
		if r.IntN(2) == 0 {
			q = qw[:]
		}
		var got, want [32]float32
		gotMax := iq4Weights(x[:], q, sigma2, &got)
		wantMax := iq4WeightsGeneric(x[:], q, sigma2, &want)
		if math.Float32bits(gotMax) != math.Float32bits(wantMax) {
			t.Fatalf("iter %d: max %v, want %v\nx %v", it, gotMax, wantMax, x)
		}
		for j := range got {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("iter %d weight %d: %v, want %v (x %v, qw %v, sigma2 %v)", it, j, got[j], want[j], x[j], q, sigma2)
			}
		}
	}
}
