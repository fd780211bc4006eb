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

// TestKLDivergenceAgainstLlamaCpp reads a base file written by
// llama-perplexity, compares the bundled Q4_K_M quantization with it and
// checks the figures against what llama-perplexity printed for the same
// comparison (testdata/README.md): the base's perplexity, computed from the
// file alone, to the printed digit; PPL(Q) within 0.1 %; mean KL divergence,
// RMS Δp and the same-top rate within 1 %.
func TestKLDivergenceAgainstLlamaCpp(t *testing.T) {
	var want struct {
		KLD struct {
			Base, Model string
			PPLQ        float64 `json:"ppl_q"`
			PPLBase     float64 `json:"ppl_base"`
			KLDMean     float64 `json:"kld_mean"`
			RMSDp       float64 `json:"rms_dp"`
			SameTop     float64 `json:"same_top"`
		}
	}
	b, err := os.ReadFile("testdata/llamacpp.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	w := want.KLD
	l, err := Load(filepath.Join("..", w.Model), forward.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := os.Open(filepath.Join("..", w.Base))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base, err := OpenBase(f)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compare(context.Background(), l.Model, base, l.Options)
	if err != nil {
		t.Fatal(err)
	}
	n := float64(res.Count)
	pplBase := math.Exp(res.SumNLLBase / n)
	pplQ := math.Exp(res.SumNLL / n)
	kl := res.SumKLD / n
	mse, _ := meanAndUncertainty(res.SumPDiff2, res.SumPDiff4, res.Count)
	rms := 100 * math.Sqrt(mse)
	same := 100 * float64(res.SameTop) / n
	t.Logf("PPL(base) %.6f (llama.cpp %.6f), PPL(Q) %.6f (%.6f), KLD %.6f (%.6f), RMS Δp %.3f%% (%.3f%%), same top %.3f%% (%.3f%%)",
		pplBase, w.PPLBase, pplQ, w.PPLQ, kl, w.KLDMean, rms, w.RMSDp, same, w.SameTop)
	if math.Abs(pplBase-w.PPLBase) > 1e-6*w.PPLBase {
		t.Errorf("PPL(base) %.6f, llama.cpp %.6f", pplBase, w.PPLBase)
	}
	for _, c := range []struct {
		name           string
		got, want, tol float64
	}{{"PPL(Q)", pplQ, w.PPLQ, 1e-3}, {"mean KLD", kl, w.KLDMean, 1e-2}, {"RMS Δp", rms, w.RMSDp, 1e-2}, {"same top", same, w.SameTop, 1e-2}} {
		if math.Abs(c.got-c.want) > c.tol*c.want {
			t.Errorf("%s %.6f, llama.cpp %.6f: more than %g apart", c.name, c.got, c.want, c.tol)
		}
	}
}
