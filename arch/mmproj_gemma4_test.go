package arch

import (
	"slices"
	"testing"
)

// TestHWCToCHW checks the Gemma 4 patch embedder's permutation on a 2×2
// patch (columns row, column, channel → channel, row, column) and its
// refusal of shapes that are not square RGB patches.
func TestHWCToCHW(t *testing.T) {
	// One output row: value = 100*row + 10*column + channel.
	var src []float32
	for y := range 2 {
		for x := range 2 {
			for c := range 3 {
				src = append(src, float32(100*y+10*x+c))
			}
		}
	}
	shape, build, err := hwcToCHW("w", []int64{1, 12})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shape, []int64{1, 3, 2, 2}) {
		t.Errorf("shape %v", shape)
	}
	got, err := build([][]float32{src})
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{0, 10, 100, 110, 1, 11, 101, 111, 2, 12, 102, 112}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name  string
		shape []int64
	}{
		{"not RGB", []int64{4, 8}},
		{"not square", []int64{4, 6}},
		{"not 2-D", []int64{4, 3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := hwcToCHW("w", tc.shape); err == nil {
				t.Errorf("shape %v: no error", tc.shape)
			}
		})
	}
}

// TestSoftplus checks the threshold and a few values of softplus.
func TestSoftplus(t *testing.T) {
	got, err := softplus([][]float32{{0, 21, -30, 1}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float32{0.6931472, 21, 9.357623e-14, 1.3132616} {
		if got[i] != want {
			t.Errorf("softplus[%d] = %v, want %v", i, got[i], want)
		}
	}
}
