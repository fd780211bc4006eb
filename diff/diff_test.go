package diff

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"

	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// TestCompareGolden compares pairs of stories260K files and checks the keys
// and tensors reported and each tensor's figures against what gguf-py's
// dequantizers give (testdata/diff/expected.json, testdata/gen/make_diff_golden.py).
func TestCompareGolden(t *testing.T) {
	raw, err := os.ReadFile("../testdata/diff/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var pairs []struct {
		A, B     string
		Metadata [][2]string
		Tensors  map[string]struct {
			AType                  string `json:"a_type"`
			BType                  string `json:"b_type"`
			RMSE, Relative, Cosine float64
			MaxAbs                 float64 `json:"max_abs"`
		}
	}
	if err := json.Unmarshal(raw, &pairs); err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		t.Run(p.B, func(t *testing.T) {
			a, b := open(t, "../"+p.A), open(t, "../"+p.B)
			r, err := Compare(context.Background(), a, b)
			if err != nil {
				t.Fatal(err)
			}
			if r.Equal || len(r.KVs) != len(p.Metadata) {
				t.Fatalf("equal %v, %d keys differ; gguf-py: %v", r.Equal, len(r.KVs), p.Metadata)
			}
			for i, d := range r.KVs {
				if d.Key != p.Metadata[i][0] || string(d.Status) != p.Metadata[i][1] {
					t.Errorf("key %d: %s %s; gguf-py: %v", i, d.Key, d.Status, p.Metadata[i])
				}
			}
			if len(r.Tensors) != len(p.Tensors) || r.SameTensors+len(r.Tensors) != len(a.Tensors) {
				t.Fatalf("%d tensors differ, %d same; gguf-py: %d differ", len(r.Tensors), r.SameTensors, len(p.Tensors))
			}
			for _, d := range r.Tensors {
				want, ok := p.Tensors[d.Name]
				if !ok || d.Status != Changed || d.Error == nil || d.AType != want.AType || d.BType != want.BType {
					t.Errorf("%s: %+v; gguf-py: %+v", d.Name, d, want)
					continue
				}
				for _, f := range []struct {
					name      string
					got, want float64
				}{{"rmse", d.Error.RMSE, want.RMSE}, {"max_abs", d.Error.MaxAbs, want.MaxAbs},
					{"relative", d.Error.Relative, want.Relative}, {"cosine", d.Error.Cosine, want.Cosine}} {
					if math.Abs(f.got-f.want) > 1e-9*math.Max(1, math.Abs(f.want)) {
						t.Errorf("%s %s = %.17g; gguf-py: %.17g", d.Name, f.name, f.got, f.want)
					}
				}
			}
		})
	}
}

// TestCompareSelf checks a file equals itself.
func TestCompareSelf(t *testing.T) {
	a := open(t, "../testdata/stories260K/quantized/stories260K-Q2_K.gguf")
	r, err := Compare(context.Background(), a, a)
	if err != nil || !r.Equal || r.SameTensors != len(a.Tensors) {
		t.Fatalf("%v %+v", err, r)
	}
}

func open(t *testing.T, path string) *ggufread.File {
	t.Helper()
	f, err := ggufread.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
