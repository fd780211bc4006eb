package verify

import (
	"context"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/verify/forward"
)

// TestEncoders verifies the encoder fixtures' conversions: the F32 file
// alone, and its Q8_0 and Q4_K_M conversions against it, pooled as each
// file says (rank through the classifier head for the rerankers).
func TestEncoders(t *testing.T) {
	tests := []struct {
		fixture string
		pooling forward.Pooling
	}{
		{"bert", forward.PoolingCLS},
		{"xlmroberta", forward.PoolingCLS},
		{"xlmrreranker", forward.PoolingRank},
		{"roberta", forward.PoolingMean},
		{"distilbertmlm", forward.PoolingNone},
		{"eurobert", forward.PoolingMean},
		{"jinabert", forward.PoolingMean},
		{"neobert", forward.PoolingCLS},
		{"modernbert", forward.PoolingCLS},
		{"modernbertcls", forward.PoolingRank},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			dir := assembleFixture(t, tc.fixture)
			f32 := open(t, convertTo(t, dir, "f32"))
			opts := Options{Prompt: "Hello world, this is a test."}
			alone := run(t, f32, nil, opts)
			if !alone.OK || alone.Encoder == nil || alone.Encoder.Pooling != tc.pooling {
				t.Fatalf("F32 alone: OK %v, problems %v, encoder %+v", alone.OK, alone.Problems, alone.Encoder)
			}
			for _, typ := range []string{"q8_0", "Q4_K_M"} {
				rep := run(t, open(t, convertTo(t, dir, typ)), GGUFReference(f32), opts)
				e := rep.Encoder
				if e == nil {
					t.Fatalf("%s: no encoder pass: %v", typ, rep.Problems)
				}
				t.Logf("%s vs F32: %s-pooled cosine %.7f, tokens %.7f (limit %.7f, matrix error %.3g)",
					typ, e.Pooling, e.Cosine, e.TokenCosine, e.CosineLimit, e.MatrixError)
				if !rep.OK {
					t.Errorf("%s conversion fails against F32: %v", typ, rep.Problems)
				}
			}
		})
	}
}

// problemsText is a report's problems, one a line.
func problemsText(rep *Report) string {
	var all []string
	for _, p := range rep.Problems {
		all = append(all, p.String())
	}
	return strings.Join(all, "\n")
}

// TestBrokenEncoders breaks xlmroberta's F32 conversion and shows verify
// fails each against the correct file, with problems naming the difference.
func TestBrokenEncoders(t *testing.T) {
	dir := assembleFixture(t, "xlmroberta")
	good := convertTo(t, dir, "f32")
	ref := GGUFReference(open(t, good))
	tests := []struct {
		name   string
		break_ func(t *testing.T, m *model)
		want   []string // in the problems, in any order
	}{
		{"wrong pooling type", func(t *testing.T, m *model) {
			m.setKV("bert.pooling_type", gguf.Uint32(uint32(forward.PoolingMean)))
		}, []string{"bert.pooling_type", "pools with mean, the reference with cls"}},
		{"query and key swapped", func(t *testing.T, m *model) {
			q, k := m.tensor(t, "blk.1.attn_q.weight"), m.tensor(t, "blk.1.attn_k.weight")
			q.data, k.data = k.data, q.data
		}, []string{"blk.1.attn_q.weight", "blk.1.attn_k.weight", "cls-pooled output: cosine similarity"}},
		{"position table not cut", func(t *testing.T, m *model) {
			p := m.tensor(t, "position_embd.weight")
			row := len(p.data) / int(p.shape[1])
			copy(p.data[2*row:], p.data) // rows shifted as if the pad_token_id + 1 rows were kept
		}, []string{"position_embd.weight", "last hidden states: cosine similarity"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := loadModel(t, good)
			tc.break_(t, m)
			rep := run(t, open(t, m.write(t)), ref, Options{Prompt: "Hello world, this is a test."})
			if rep.OK {
				t.Fatalf("verify passes a broken file (encoder %+v)", rep.Encoder)
			}
			text := problemsText(rep)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("no problem names %q; problems:\n%s", w, text)
				}
			}
		})
	}
}

// TestEncoderCheckpointReference verifies the reranker's Q8_0 conversion
// against the checkpoint folder itself (mapped through the converter's
// plan, the position table cut as the converter cuts it).
func TestEncoderCheckpointReference(t *testing.T) {
	dir := assembleFixture(t, "xlmrreranker")
	ref, err := OpenCheckpoint(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	rep := run(t, open(t, convertTo(t, dir, "q8_0")), ref, Options{Prompt: "Hello world, this is a test."})
	if !rep.OK || rep.Encoder == nil || rep.Encoder.Pooling != forward.PoolingRank {
		t.Fatalf("OK %v, encoder %+v, problems %v", rep.OK, rep.Encoder, rep.Problems)
	}
	t.Logf("rank scores %v, checkpoint's %v (cosine %.7f)", rep.Encoder.Pooled, rep.Encoder.RefPooled, rep.Encoder.Cosine)
}

// TestBrokenReranker: a reranker's single score has cosine 1 with any score
// of its sign, so a wrong classifier bias is caught by the relative error.
func TestBrokenReranker(t *testing.T) {
	good := convertTo(t, assembleFixture(t, "xlmrreranker"), "f32")
	m := loadModel(t, good)
	b := m.tensor(t, "cls.output.bias")
	xs := f32s(b)
	xs[0] *= 1.5
	setF32s(b, xs)
	rep := run(t, open(t, m.write(t)), GGUFReference(open(t, good)), Options{Prompt: "Hello world, this is a test."})
	var text []string
	for _, p := range rep.Problems {
		text = append(text, p.String())
	}
	all := strings.Join(text, "\n")
	if rep.OK || !strings.Contains(all, "rank-pooled output: relative error") || !strings.Contains(all, "cls.output.bias") {
		t.Fatalf("OK %v; problems:\n%s", rep.OK, all)
	}
}

// TestBrokenRotaryEncoders breaks EuroBERT's, ModernBERT's, Jina BERT v2's
// and NeoBERT's F32 conversions where their graphs differ from BERT's
// (rotary bases, the sliding-window layers' base, the classifier's mean
// pooling) or in their pooling type, and shows verify fails each against
// the correct file, naming the difference.
func TestBrokenRotaryEncoders(t *testing.T) {
	tests := []struct {
		name, fixture string
		break_        func(t *testing.T, m *model)
		want          []string // in the problems, in any order
	}{
		{"eurobert query and key swapped", "eurobert", func(t *testing.T, m *model) {
			q, k := m.tensor(t, "blk.1.attn_q.weight"), m.tensor(t, "blk.1.attn_k.weight")
			q.data, k.data = k.data, q.data
		}, []string{"blk.1.attn_q.weight", "blk.1.attn_k.weight", "last hidden states: cosine similarity"}},
		{"eurobert rope base", "eurobert", func(t *testing.T, m *model) {
			m.setKV("eurobert.rope.freq_base", gguf.Float32(10))
		}, []string{"eurobert.rope.freq_base", "last hidden states: cosine similarity"}},
		{"modernbert sliding-window rope base", "modernbert", func(t *testing.T, m *model) {
			m.setKV("modern-bert.rope.freq_base_swa", gguf.Float32(160000))
		}, []string{"modern-bert.rope.freq_base_swa", "last hidden states: cosine similarity"}},
		{"jinabert wrong pooling type", "jinabert", func(t *testing.T, m *model) {
			m.setKV("jina-bert-v2.pooling_type", gguf.Uint32(uint32(forward.PoolingCLS)))
		}, []string{"jina-bert-v2.pooling_type", "pools with cls, the reference with mean"}},
		{"jinabert feed-forward halves swapped", "jinabert", func(t *testing.T, m *model) {
			up := m.tensor(t, "blk.0.ffn_up.weight")
			half := len(up.data) / 2
			gate := append([]byte(nil), up.data[:half]...)
			copy(up.data[:half], up.data[half:])
			copy(up.data[half:], gate)
		}, []string{"blk.0.ffn_up.weight", "last hidden states: cosine similarity"}},
		{"neobert wrong pooling type", "neobert", func(t *testing.T, m *model) {
			m.setKV("neo-bert.pooling_type", gguf.Uint32(uint32(forward.PoolingMean)))
		}, []string{"neo-bert.pooling_type", "pools with mean, the reference with cls"}},
		{"neobert rope base", "neobert", func(t *testing.T, m *model) {
			m.setKV("neo-bert.rope.freq_base", gguf.Float32(10))
		}, []string{"neo-bert.rope.freq_base", "last hidden states: cosine similarity"}},
		{"modernbertcls classifier pooling", "modernbertcls", func(t *testing.T, m *model) {
			m.setKV("modern-bert.classifier.pooling_type", gguf.Uint32(uint32(forward.PoolingCLS)))
		}, []string{"modern-bert.classifier.pooling_type", "rank-pooled output"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			good := convertTo(t, assembleFixture(t, tc.fixture), "f32")
			m := loadModel(t, good)
			tc.break_(t, m)
			rep := run(t, open(t, m.write(t)), GGUFReference(open(t, good)), Options{Prompt: "Hello world, this is a test."})
			text := problemsText(rep)
			if rep.OK {
				t.Fatalf("verify passes a broken file (encoder %+v)", rep.Encoder)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("no problem names %q; problems:\n%s", w, text)
				}
			}
		})
	}
}
