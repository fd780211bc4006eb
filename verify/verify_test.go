package verify

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

const (
	storiesF32  = "../testdata/stories260K/gguf/stories260K-F32.gguf"
	storiesQ8_0 = "../testdata/gguf/stories260K-Q8_0.gguf"
	storiesQ2_K = "../testdata/stories260K/quantized/stories260K-Q2_K.gguf"
	storiesIQ2  = "../testdata/stories260K/quantized/stories260K-IQ2_XXS-imat.gguf"
	storiesQ4KM = "../testdata/stories260K/quantized/stories260K-Q4_K_M-imat.gguf"
)

func open(t testing.TB, path string) *File {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// greedyExpectation is verify/testdata/stories260K-greedy-F32.json, llama.cpp's
// own run of stories260K-F32.gguf.
type greedyExpectation struct {
	PromptIDs  []int  `json:"prompt_ids"`
	GreedyIDs  []int  `json:"greedy_ids"`
	GreedyText string `json:"greedy_text"`
}

func readGreedy(t *testing.T, name string) greedyExpectation {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var e greedyExpectation
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func run(t *testing.T, f *File, ref Reference, opts Options) *Report {
	t.Helper()
	if opts.Threads == 0 {
		opts.Threads = 2
	}
	rep, err := Run(context.Background(), f, ref, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestAlone runs stories260K without a reference: the structural checks
// pass and the greedy continuation is llama.cpp's.
func TestAlone(t *testing.T) {
	want := readGreedy(t, "stories260K-greedy-F32.json")
	rep := run(t, open(t, storiesF32), nil, Options{})
	if !rep.OK || len(rep.Problems) > 0 {
		t.Fatalf("not OK: %v", rep.Problems)
	}
	fw := rep.Forward
	if fw == nil {
		t.Fatal("no forward pass")
	}
	if !slices.Equal(fw.PromptIDs, want.PromptIDs) {
		t.Errorf("prompt ids %v, llama.cpp %v", fw.PromptIDs, want.PromptIDs)
	}
	if !slices.Equal(fw.GreedyIDs, want.GreedyIDs) {
		t.Errorf("greedy ids\n got %v\nwant %v", fw.GreedyIDs, want.GreedyIDs)
	}
	if fw.GreedyText != want.GreedyText {
		t.Errorf("greedy text %q, llama.cpp %q", fw.GreedyText, want.GreedyText)
	}
	if len(fw.KL) != 0 || len(rep.Tensors) != 0 {
		t.Errorf("comparisons without a reference: %d KL, %d tensors", len(fw.KL), len(rep.Tensors))
	}
}

// TestQuantized checks llama.cpp's quantizations of stories260K against its
// F32 conversion. Every one of them is a correct file, so every one must
// pass, each within the limits of its own types. (stories260K's rows are 64
// and 172 wide, so llama-quantize falls back from Q2_K and IQ2_XXS to 4-bit
// types for most tensors: the files' real KL is that of those types.)
func TestQuantized(t *testing.T) {
	ref := GGUFReference(open(t, storiesF32))
	tests := []struct {
		path    string
		minTop1 float64 // the plain top-1 agreement this file must reach
	}{
		{storiesF32, 1},
		{"../testdata/stories260K/gguf/stories260K-F16.gguf", 1},
		{"../testdata/stories260K/gguf/stories260K-BF16.gguf", 0.99},
		{storiesQ8_0, 0.99},
		{storiesQ4KM, 0.9},
		{storiesQ2_K, 0.85},
		{storiesIQ2, 0.85},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			rep := run(t, open(t, tc.path), ref, Options{})
			fw := rep.Forward
			if fw == nil {
				t.Fatalf("no forward pass: %v", rep.Problems)
			}
			t.Logf("matrix error %.4f: KL mean %.3g (limit %.3g) max %.3g, top-1 %.3f (decisive %.3f of %d, limit %.3f)",
				fw.MatrixError, fw.KLMean, fw.KLLimit, fw.KLMax, fw.Top1, fw.Top1Decisive, fw.Decisive, fw.Top1Limit)
			if !rep.OK {
				t.Errorf("a correct file fails: %v", rep.Problems)
			}
			if len(rep.Tensors) != 47 {
				t.Errorf("%d tensor comparisons, want 47", len(rep.Tensors))
			}
			if fw.Top1 < tc.minTop1 {
				t.Errorf("top-1 %.3f below %.3f", fw.Top1, tc.minTop1)
			}
			if len(fw.KL) != len(fw.PromptIDs)+DefaultNPredict-1 {
				t.Errorf("%d KL positions, want %d", len(fw.KL), len(fw.PromptIDs)+DefaultNPredict-1)
			}
			// The KL of a lossy file is measured, not assumed: it must be
			// above float32 noise and below its limit.
			lossy := fw.MatrixError > 1e-3
			if lossy && fw.KLMean < 1e-7 {
				t.Errorf("KL mean %.3g of a lossy file is suspiciously small", fw.KLMean)
			}
		})
	}
}
