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

// TestIQ4TrialsAVX2 compares the vector sums of the 16 trials with
// iq4Fit's on random blocks, blocks with values on the level bounds, and
// inverse scales that put values exactly on the bounds, beyond the table,
// at infinities and NaN.
func TestIQ4TrialsAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(18, 418))
	var x [32]float32
	var w [32]float32
	for it := range 20000 {
		iq4TestBlock(r, x[:], &w)
		var ids [16]float32
		for k := range ids {
			switch r.IntN(8) {
			case 0:
				ids[k] = 1
			case 1:
				ids[k] = float32(math.Inf(1 - 2*r.IntN(2)))
			case 2:
				ids[k] = float32(math.NaN())
			default:
				ids[k] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(61)-30)))
			}
		}
		var got, want [32]float32
		iq4TrialsAVX2(&x[0], &w[0], &ids, &iq4Tables, &got)
		iq4TrialsGeneric(x[:], &w, &ids, &want)
		for k := range got {
			if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
				t.Fatalf("iter %d sum %d (id %v): %v, want %v\nx %v\nw %v", it, k, ids[k%16], got[k], want[k], x, w)
			}
		}
	}
}

// TestIQ4PackAVX2 compares the vector indexes with iq4Index's on the
// blocks of TestIQ4TrialsAVX2.
func TestIQ4PackAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(18, 518))
	var x [32]float32
	var w [32]float32
	for it := range 20000 {
		iq4TestBlock(r, x[:], &w)
		id := float32(1)
		switch r.IntN(4) {
		case 0:
			id = float32(math.Inf(1 - 2*r.IntN(2)))
		case 1:
			id = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(61)-30)))
		}
		var got, want [16]byte
		iq4PackAVX2(&got[0], &x[0], id, &iq4Tables)
		iq4PackGeneric(want[:], x[:], id)
		if got != want {
			t.Fatalf("iter %d id %v: %x, want %x\nx %v", it, id, got, want, x)
		}
	}
}

// TestIQ4WeightsAVX2 compares the vector weights and block maximum with
// the plain ones on the blocks of TestIQ4TrialsAVX2, on blocks whose
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
		gotMax := iq4WeightsAVX2(&x[0], ptrOrNil(q), sigma2, &got)
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

func ptrOrNil(s []float32) *float32 {
	if s == nil {
		return nil
	}
	return &s[0]
}
