package verify

import (
	"context"
	"path/filepath"
	"testing"
)

// TestCheckpointReference verifies llama.cpp's conversions of stories260K
// against the Hugging Face checkpoint they came from, mapped through the
// converter's plan (computed on demand, nothing written): the F32 file's
// tensors come out bit-identical, the Q8_0 one's within Q8_0's limits; a
// checkpoint that is not one is an error.
func TestCheckpointReference(t *testing.T) {
	ref, err := OpenCheckpoint(context.Background(), "../testdata/stories260K/source")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path   string
		maxRel float64
	}{{storiesF32, 0}, {storiesQ8_0, 0.01}} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			rep := run(t, open(t, tc.path), ref, Options{NPredict: 8})
			if !rep.OK {
				t.Fatalf("fails against its checkpoint: %v", rep.Problems)
			}
			if len(rep.Tensors) != 47 {
				t.Errorf("%d tensors compared, want 47", len(rep.Tensors))
			}
			for _, r := range rep.Tensors {
				if r.RelError > tc.maxRel {
					t.Errorf("%s: relative error %.3g > %.3g", r.Name, r.RelError, tc.maxRel)
				}
			}
		})
	}
	if err := ref.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCheckpoint(context.Background(), t.TempDir()); err == nil {
		t.Error("an empty folder makes a reference")
	}
}
