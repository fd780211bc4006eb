package verify

import (
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/verify/forward"
)

// nomicShrunk rewrites a nomicbert fixture conversion with the fixture's
// real sizes: the converter (as llama.cpp's) writes the defaults of
// transformers' NomicBertConfig (nomic-embed-text-v1.5's 768 × 12 blocks)
// whatever the remote config says, which the shrunken tensors do not fit
// (verify rightly fails that file on its tensor shapes).
func nomicShrunk(t *testing.T, path string) *model {
	m := loadModel(t, path)
	for k, v := range map[string]uint32{
		"embedding_length": 16, "block_count": 2, "feed_forward_length": 32, "attention.head_count": 2,
		"attention.key_length": 8, "attention.value_length": 8,
	} {
		m.setKV("nomic-bert."+k, gguf.Uint32(v))
	}
	return m
}

// TestNomicBERT verifies the nomicbert fixture's F32 conversion alone and
// its Q8_0 conversion against it (mean pooling), then breaks the F32 file
// where Nomic BERT's graph differs from BERT's (the rotary base, queries
// and keys swapped) and shows verify fails each, naming the difference.
func TestNomicBERT(t *testing.T) {
	dir := assembleFixture(t, "nomicbert")
	good := nomicShrunk(t, convertTo(t, dir, "f32")).write(t)
	opts := Options{Prompt: "Hello world, this is a test."}
	alone := run(t, open(t, good), nil, opts)
	if !alone.OK || alone.Encoder == nil || alone.Encoder.Pooling != forward.PoolingMean {
		t.Fatalf("F32 alone: OK %v, problems %v, encoder %+v", alone.OK, alone.Problems, alone.Encoder)
	}
	ref := GGUFReference(open(t, good))
	q8 := run(t, open(t, nomicShrunk(t, convertTo(t, dir, "q8_0")).write(t)), ref, opts)
	if e := q8.Encoder; !q8.OK || e == nil {
		t.Fatalf("Q8_0 against F32: OK %v, problems %v", q8.OK, q8.Problems)
	} else {
		t.Logf("Q8_0 vs F32: %s-pooled cosine %.7f, tokens %.7f (limit %.7f)", e.Pooling, e.Cosine, e.TokenCosine, e.CosineLimit)
	}
	tests := []struct {
		name   string
		break_ func(t *testing.T, m *model)
		want   []string // in the problems, in any order
	}{
		{"rope base", func(t *testing.T, m *model) {
			m.setKV("nomic-bert.rope.freq_base", gguf.Float32(10000))
		}, []string{"nomic-bert.rope.freq_base", "last hidden states: cosine similarity"}},
		{"query and key swapped", func(t *testing.T, m *model) {
			qkv := m.tensor(t, "blk.1.attn_qkv.weight")
			third := len(qkv.data) / 3
			q := append([]byte(nil), qkv.data[:third]...)
			copy(qkv.data[:third], qkv.data[third:2*third])
			copy(qkv.data[third:2*third], q)
		}, []string{"blk.1.attn_qkv.weight", "last hidden states: cosine similarity"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := loadModel(t, good)
			tc.break_(t, m)
			rep := run(t, open(t, m.write(t)), ref, opts)
			text := problemsText(rep)
			if rep.OK {
				t.Fatalf("verify passes a broken file (encoder %+v)", rep.Encoder)
			}
			t.Logf("problems:\n%s", text)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("no problem names %q; problems:\n%s", w, text)
				}
			}
		})
	}
}

// TestNomicBERTMoE verifies the nomicbertmoe fixture's F32 conversion
// (its sizes rewritten to the fixture's, as nomicShrunk does for
// nomicbert) alone and its Q8_0 conversion against it, then shows verify
// fails the F32 file with a wrong pooling type or an inverted router.
func TestNomicBERTMoE(t *testing.T) {
	shrunk := func(path string) string {
		m := loadModel(t, path)
		for k, v := range map[string]uint32{
			"embedding_length": 4, "block_count": 2, "feed_forward_length": 8, "attention.head_count": 2,
			"attention.key_length": 2, "attention.value_length": 2,
		} {
			m.setKV("nomic-bert-moe."+k, gguf.Uint32(v))
		}
		return m.write(t)
	}
	dir := assembleFixture(t, "nomicbertmoe")
	good := shrunk(convertTo(t, dir, "f32"))
	opts := Options{Prompt: "Hello world, this is a test."}
	alone := run(t, open(t, good), nil, opts)
	if !alone.OK || alone.Encoder == nil || alone.Encoder.Pooling != forward.PoolingMean {
		t.Fatalf("F32 alone: OK %v, problems %v, encoder %+v", alone.OK, alone.Problems, alone.Encoder)
	}
	ref := GGUFReference(open(t, good))
	q8 := run(t, open(t, shrunk(convertTo(t, dir, "q8_0"))), ref, opts)
	if e := q8.Encoder; !q8.OK || e == nil {
		t.Fatalf("Q8_0 against F32: OK %v, problems %v", q8.OK, q8.Problems)
	} else {
		t.Logf("Q8_0 vs F32: %s-pooled cosine %.7f, tokens %.7f (limit %.7f)", e.Pooling, e.Cosine, e.TokenCosine, e.CosineLimit)
	}
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, m *model)
		want   []string
	}{
		{"wrong pooling type", func(t *testing.T, m *model) {
			m.setKV("nomic-bert-moe.pooling_type", gguf.Uint32(uint32(forward.PoolingCLS)))
		}, []string{"nomic-bert-moe.pooling_type", "pools with cls, the reference with mean"}},
		{"router rows swapped", func(t *testing.T, m *model) {
			g := m.tensor(t, "blk.1.ffn_gate_inp.weight")
			row := len(g.data) / 4
			first := append([]byte(nil), g.data[:row]...)
			copy(g.data[:row], g.data[3*row:])
			copy(g.data[3*row:], first)
		}, []string{"blk.1.ffn_gate_inp.weight"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := loadModel(t, good)
			tc.break_(t, m)
			rep := run(t, open(t, m.write(t)), ref, opts)
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
