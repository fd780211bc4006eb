package main

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
	"github.com/ggufkit/ggufkit/readers/safetensors"
)

// TestGenerateReadable: the file passes the safetensors reader's checks,
// has the requested tensors and only values of the documented magnitude.
func TestGenerateReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := run(path, 1, 64, 1024); err != nil {
		t.Fatal(err)
	}
	s, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := s.Tensors()
	if len(ts) != 8 || ts[0].DType != readers.BF16 || ts[0].Shape[0] != 64 || ts[0].Shape[1] != 1024 {
		t.Fatalf("tensors %+v", ts)
	}
	vals := make([]float32, 64*1024)
	neg := 0
	for _, ti := range ts {
		if err := s.ReadFloat32(context.Background(), ti.Name, vals, 0, 64); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if a := math.Abs(float64(v)); a < 1.0/128 || a >= 512 {
				t.Fatalf("%s: value %g out of range", ti.Name, v)
			}
			if v < 0 {
				neg++
			}
		}
	}
	if frac := float64(neg) / float64(8*len(vals)); frac < 0.45 || frac > 0.55 {
		t.Errorf("%.3f of the values are negative", frac)
	}
}

func TestGenerateBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name            string
		path            string
		mib, rows, cols int
	}{
		{"no output", "", 1, 64, 64},
		{"zero size", filepath.Join(dir, "a"), 0, 64, 64},
		{"huge size", filepath.Join(dir, "b"), maxMiB + 1, 64, 64},
		{"odd cols", filepath.Join(dir, "c"), 1, 64, 6},
		{"no folder", filepath.Join(dir, "missing", "d"), 1, 64, 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := run(c.path, c.mib, c.rows, c.cols); err == nil {
				t.Error("no error")
			}
		})
	}
}
