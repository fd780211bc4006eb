package perplexity

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ggufkit/ggufkit/verify/forward"
)

// TestAgainstLlamaCpp scores the bundled stories260K model on the reference
// text and compares every running perplexity with what llama.cpp printed
// (testdata/README.md): within 1e-4 relative (the issue asks for 0.1 %);
// the forward pass is not bit-exact with ggml's, so the last printed digit
// may differ.
func TestAgainstLlamaCpp(t *testing.T) {
	var want struct {
		Model, Text string
		Ctx         int
		ChunkPPL    []float64 `json:"chunk_ppl"`
		PPL, StdErr float64
	}
	b, err := os.ReadFile("testdata/llamacpp.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	l, err := Load(filepath.Join("..", want.Model), forward.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	text, err := os.ReadFile(filepath.Join("..", want.Text))
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := l.Tokenizer.Encode(string(text), true, false)
	if err != nil {
		t.Fatal(err)
	}
	o := l.Options
	o.Context = want.Ctx
	res, err := Run(context.Background(), l.Model, tokens, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ChunkPPL) != len(want.ChunkPPL) {
		t.Fatalf("%d chunks, llama.cpp %d", len(res.ChunkPPL), len(want.ChunkPPL))
	}
	close := func(got, want float64) bool { return math.Abs(got-want) <= 1e-4*want }
	for i, p := range res.ChunkPPL {
		if !close(p, want.ChunkPPL[i]) {
			t.Errorf("chunk %d: PPL %.4f, llama.cpp %.4f", i+1, p, want.ChunkPPL[i])
		}
	}
	if !close(res.PPL, want.PPL) || !close(res.StdErr, want.StdErr) {
		t.Errorf("final PPL %.4f ± %.5f, llama.cpp %.4f ± %.5f", res.PPL, res.StdErr, want.PPL, want.StdErr)
	}
	t.Logf("PPL %.4f ± %.5f (llama.cpp %.4f ± %.5f)", res.PPL, res.StdErr, want.PPL, want.StdErr)
}
