package arch

import "testing"

// TestLlama3RopeFactorsRTrueDiv: Apertus's rope base 12000000 put one
// smoothly interpolated factor 2 ulp away from llama.cpp's until the
// Python-number-by-tensor divisions were done as torch does them
// (reciprocal, then multiply).
func TestLlama3RopeFactorsRTrueDiv(t *testing.T) {
	got := llama3RopeFactors(12000000, 16, 8, 1, 4, 8192)
	if want := float32(1.4803602695465088); got[3] != want {
		t.Errorf("factor 3 = %.10g, want %.10g (torch)", got[3], want)
	}
}
