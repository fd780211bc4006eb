package forward

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// encoderReference is what the fixture generator stores for an encoder
// beside its last hidden state: the pooling it applied and the result
// (sentence-transformers' CLS / mean pooling, or the classifier's scores).
type encoderReference struct {
	Pooling string    `json:"pooling"`
	Pooled  []float32 `json:"pooled"`
}

// readEncoderReference reads a fixture's logits.json as an
// encoderReference.
func readEncoderReference(t *testing.T, fixture string) encoderReference {
	t.Helper()
	var ref encoderReference
	raw, err := os.ReadFile(filepath.Join(fixtures, fixture, "logits.json"))
	if err == nil {
		err = json.Unmarshal(raw, &ref)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// runEncoder runs e over the reference's prompt and returns the least
// cosine similarity of a token's last hidden state to the reference's and
// the output pooled with p.
func runEncoder(t *testing.T, e *Encoder, want *transformersLogits, p Pooling) (float64, []float32) {
	t.Helper()
	hidden, err := e.Hidden(context.Background(), want.PromptIDs)
	if err != nil {
		t.Fatal(err)
	}
	least := 1.0
	for i, row := range want.logits {
		least = min(least, Cosine(hidden[want.Positions[i]], row))
	}
	pooled, err := e.Pool(hidden, p)
	if err != nil {
		t.Fatal(err)
	}
	return least, pooled
}

// TestEncoderFixtures runs the encoder (BERT's, EuroBERT's or ModernBERT's
// graph) on the F32 conversion of each encoder fixture and compares every token's last hidden state and the
// pooled output, pooled as the GGUF's pooling_type says (rank for the
// sequence classifiers, which have none), with transformers': cosine ≥
// 0.99999. llama.cpp's GELU is ggml's tanh approximation looked up in fp16
// where transformers' is erf, which is the whole difference at these sizes.
//
// CamemBERT is the exception, a difference of llama.cpp's: its converter
// handles CamembertModel as BertModel, so the position table keeps the
// pad_token_id + 1 rows RoBERTa-style models skip and llama.cpp counts
// positions from row 0 where transformers counts from row 2. The test
// requires that difference to show (cosine < 0.999). DistilBERT's
// classifier is the other: llama.cpp's rank head applies tanh after cls
// (RoBERTa's head), DistilBERT's a ReLU after pre_classifier, so only its
// hidden states are compared.
//
// ModernBERT's classifier fixture stores the classifier's scores in place
// of hidden states: its rank pooling (mean, dense, GELU, norm, output) is
// compared with them.
//
// Jina BERT v2 (remote code) is compared with the fixture generator's own
// PyTorch forward pass of it (ALiBi, GeGLU; testdata/gen/fixtures/jinabert.py),
// NeoBERT in TestNeoBERT.
func TestEncoderFixtures(t *testing.T) {
	tests := []struct {
		fixture     string
		pooling     Pooling // expected in the GGUF
		differs     bool    // llama.cpp's graph differs from transformers'
		headDiffers bool    // llama.cpp's rank head differs from the model's
		scores      bool    // logits.f32 holds the classifier's scores, not hidden states
	}{
		{"bert", PoolingCLS, false, false, false},
		{"xlmroberta", PoolingCLS, false, false, false},
		{"xlmrreranker", PoolingUnspecified, false, false, false},
		{"roberta", PoolingMean, false, false, false},
		{"robertacls", PoolingUnspecified, false, false, false},
		{"camembert", PoolingMean, true, false, false},
		{"distilbert", PoolingCLS, false, false, false},
		{"distilbertmlm", PoolingUnspecified, false, false, false},
		{"distilbertcls", PoolingUnspecified, false, true, false},
		{"jinabert", PoolingMean, false, false, false},
		{"eurobert", PoolingMean, false, false, false},
		{"modernbert", PoolingCLS, false, false, false},
		{"modernbertcls", PoolingUnspecified, false, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			f := convertFixture(t, tc.fixture)
			c, err := ParseEncoderConfig(f)
			if err != nil {
				t.Fatal(err)
			}
			if c.Pooling != tc.pooling {
				t.Errorf("pooling type %v, want %v", c.Pooling, tc.pooling)
			}
			e, err := LoadEncoder(c, GGUFWeights(f))
			if err != nil {
				t.Fatal(err)
			}
			want := readTransformersLogits(t, tc.fixture)
			hidden, err := e.Hidden(context.Background(), want.PromptIDs)
			if err != nil {
				t.Fatal(err)
			}
			if tc.scores {
				got, err := e.Pool(hidden, PoolingRank)
				if err != nil {
					t.Fatal(err)
				}
				checkPooled(t, PoolingRank, got, want.logits[0])
				return
			}
			if tc.differs {
				if cos := Cosine(hidden[0], want.logits[0]); cos > 0.999 {
					t.Errorf("token 0: hidden state cosine %.7f, want llama.cpp's known difference (< 0.999)", cos)
				}
				return
			}
			least := 1.0
			for i, row := range want.logits {
				cos := Cosine(hidden[want.Positions[i]], row)
				if !(cos >= 0.99999) {
					t.Errorf("token %d: hidden state cosine %.7f < 0.99999", want.Positions[i], cos)
				}
				least = min(least, cos)
			}
			t.Logf("hidden states: least cosine %.8f", least)
			ref := readEncoderReference(t, tc.fixture)
			if ref.Pooled == nil || tc.headDiffers {
				return
			}
			p := c.Pooling
			if p == PoolingUnspecified {
				p = PoolingRank
			}
			got, err := e.Pool(hidden, p)
			if err != nil {
				t.Fatal(err)
			}
			checkPooled(t, p, got, ref.Pooled)
		})
	}
}

// checkPooled compares a pooled output with transformers': cosine ≥
// 0.99999 and, since a single score's cosine is 1 whatever its size, a
// relative error within the distance of unit vectors at that cosine.
func checkPooled(t *testing.T, p Pooling, got, want []float32) {
	t.Helper()
	cos := Cosine(got, want)
	t.Logf("%s pooling: cosine %.8f (%v vs %v)", p, cos, got, want)
	if !(cos >= 0.99999) {
		t.Errorf("%s pooling: cosine %.7f < 0.99999: got %v, transformers %v", p, cos, got, want)
	}
	if rel := RelError(got, want); !(rel <= 0.0045) {
		t.Errorf("%s pooling: relative error %.3g > 0.0045: got %v, transformers %v", p, rel, got, want)
	}
}
