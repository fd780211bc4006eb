package safetensors

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
)

// expected mirrors testdata/expected.json, written by
// testdata/gen/make_fixtures.py from torch's own conversions.
type expected struct {
	Sources map[string]struct {
		Path    string `json:"path"`
		Tensors []struct {
			Name   string  `json:"name"`
			DType  string  `json:"dtype"`
			Shape  []int64 `json:"shape"`
			File   string  `json:"file"`
			SHA256 string  `json:"sha256_f32le"`
		} `json:"tensors"`
	} `json:"sources"`
}

func loadExpected(t *testing.T) expected {
	t.Helper()
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestGolden opens every fixture and compares the tensor list (order,
// dtype, shape, file) and each tensor's float32 digest with what torch
// computed.
func TestGolden(t *testing.T) {
	e := loadExpected(t)
	if len(e.Sources) < 4 {
		t.Fatalf("expected.json has %d sources", len(e.Sources))
	}
	for label, want := range e.Sources {
		t.Run(label, func(t *testing.T) {
			path := filepath.Join("testdata", want.Path)
			if len(want.Tensors) > 0 && label != "stories260K-sharded" {
				path = filepath.Join(path, want.Tensors[0].File)
			}
			src, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			got := src.Tensors()
			if len(got) != len(want.Tensors) {
				t.Fatalf("%d tensors, want %d", len(got), len(want.Tensors))
			}
			for i, w := range want.Tensors {
				g := got[i]
				if g.Name != w.Name || string(g.DType) != w.DType || !slices.Equal(g.Shape, w.Shape) || g.File != w.File {
					t.Errorf("tensor %d = %+v, want %+v", i, g, w)
					continue
				}
				sum, err := readers.Checksum(context.Background(), src, g)
				if err != nil {
					t.Errorf("%s: %v", g.Name, err)
				} else if sum != w.SHA256 {
					t.Errorf("%s (%s %v): sha256 %s, want %s", g.Name, g.DType, g.Shape, sum, w.SHA256)
				}
			}
		})
	}
}

// TestShardedEqualsSingle reads every tensor of the sharded stories260K
// and of the single file, row by row, and compares the values bit for bit.
func TestShardedEqualsSingle(t *testing.T) {
	one, err := Open("../../testdata/stories260K/source")
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	sharded, err := Open("../../testdata/stories260K/source-sharded")
	if err != nil {
		t.Fatal(err)
	}
	defer sharded.Close()
	if len(one.Tensors()) != len(sharded.Tensors()) {
		t.Fatalf("%d vs %d tensors", len(one.Tensors()), len(sharded.Tensors()))
	}
	ctx := context.Background()
	for _, ti := range sharded.Tensors() {
		rows, cols := readers.Rows(ti.Shape)
		a, b := make([]float32, cols), make([]float32, cols)
		for r := range int(rows) {
			if err := one.ReadFloat32(ctx, ti.Name, a, r, 1); err != nil {
				t.Fatal(err)
			}
			if err := sharded.ReadFloat32(ctx, ti.Name, b, r, 1); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a, b) {
				t.Fatalf("%s row %d differs", ti.Name, r)
			}
		}
	}
}
