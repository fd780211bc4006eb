package forward

import (
	"errors"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// nomicShrunk is the nomicbert fixture's conversion with its real sizes:
// the converter (as llama.cpp's) reads transformers' NomicBertConfig,
// whose fields are not the remote config's, and writes the defaults of
// nomic-embed-text-v1.5 (768 wide, 12 blocks), which the shrunken tensors
// do not fit.
func nomicShrunk(md Metadata) Metadata {
	for _, kv := range []struct {
		suffix string
		v      uint32
	}{
		{gguf.SuffixEmbeddingLength, 16}, {gguf.SuffixBlockCount, 2}, {gguf.SuffixFeedForwardLength, 32},
		{gguf.SuffixHeadCount, 2}, {gguf.SuffixKeyLength, 8}, {gguf.SuffixValueLength, 8},
	} {
		md = withKV{md, archNomicBERT + "." + kv.suffix, gguf.Uint32(kv.v)}
	}
	return md
}

// TestNomicBERT runs Nomic BERT's graph (BERT's with fused QKV, NeoX
// rotary positions and a SwiGLU feed-forward) on the nomicbert fixture's
// F32 conversion and compares every token's last hidden state and the
// mean-pooled output with transformers' NomicBertModel: cosine ≥ 0.99999.
// A rotary base other than the file's, or queries and keys swapped, moves
// them off.
func TestNomicBERT(t *testing.T) {
	f := convertFixture(t, "nomicbert")
	want := readTransformersLogits(t, "nomicbert")
	ref := readEncoderReference(t, "nomicbert")
	swapQK := func(e *Encoder) {
		for i := range e.layers {
			L := &e.layers[i]
			L.q, L.k = L.k, L.q
		}
	}
	tests := []struct {
		name   string
		md     func(Metadata) Metadata
		break_ func(*Encoder)
		good   bool
	}{
		{"file", func(md Metadata) Metadata { return md }, nil, true},
		{"rope base 10000", func(md Metadata) Metadata {
			return withKV{md, "nomic-bert.rope.freq_base", gguf.Float32(10000)}
		}, nil, false},
		{"query and key swapped", func(md Metadata) Metadata { return md }, swapQK, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseEncoderConfig(tc.md(nomicShrunk(f)))
			if err != nil {
				t.Fatal(err)
			}
			if c.Pooling != PoolingMean || c.RopeBase == 0 {
				t.Fatalf("pooling %v, rope base %g; want mean and the file's base", c.Pooling, c.RopeBase)
			}
			e, err := LoadEncoder(c, GGUFWeights(f))
			if err != nil {
				t.Fatal(err)
			}
			if tc.break_ != nil {
				tc.break_(e)
			}
			least, pooled := runEncoder(t, e, want, c.Pooling)
			t.Logf("hidden states: least cosine %.8f; mean-pooled cosine %.8f", least, Cosine(pooled, ref.Pooled))
			if !tc.good {
				if least > 0.999 {
					t.Errorf("least hidden state cosine %.7f: the broken graph matches transformers", least)
				}
				return
			}
			if least < 0.99999 {
				t.Errorf("least hidden state cosine %.7f < 0.99999", least)
			}
			checkPooled(t, PoolingMean, pooled, ref.Pooled)
		})
	}
}

// TestNomicBERTMetadata: a head size that does not split the embedding
// and a partial rotation are refused.
func TestNomicBERTMetadata(t *testing.T) {
	f := convertFixture(t, "nomicbert")
	tests := []struct {
		name, key string
		v         gguf.Value
		want      error
	}{
		{"key length", "nomic-bert.attention.key_length", gguf.Uint32(4), ErrMetadata},
		{"partial rotation", "nomic-bert.rope.dimension_count", gguf.Uint32(4), ErrUnsupported},
		{"rope base", "nomic-bert.rope.freq_base", gguf.Float32(0), ErrMetadata},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEncoderConfig(withKV{nomicShrunk(f), tc.key, tc.v})
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			t.Log(err)
		})
	}
}

// TestNomicBERTMoE runs nomic-bert-moe's graph (BERT's with rotary
// positions, GELU MLPs with biases, and a soft-max-routed mixture of GELU
// experts on every second block) on the nomicbertmoe fixture's F32
// conversion, its sizes rewritten to the fixture's (the converter writes
// NomicBertConfig's defaults, as for nomicbert), and compares every
// token's last hidden state and the mean-pooled output with the fixture
// generator's PyTorch forward pass (testdata/gen/fixtures/nomicbertmoe.py,
// given the file's rope base, epsilon and missing expert bias): cosine ≥
// 0.99999. Routing to the least probable experts moves them off.
func TestNomicBERTMoE(t *testing.T) {
	f := convertFixture(t, "nomicbertmoe")
	var md Metadata = f
	for _, kv := range []struct {
		suffix string
		v      uint32
	}{
		{gguf.SuffixEmbeddingLength, 4}, {gguf.SuffixBlockCount, 2}, {gguf.SuffixFeedForwardLength, 8},
		{gguf.SuffixHeadCount, 2}, {gguf.SuffixKeyLength, 2}, {gguf.SuffixValueLength, 2},
	} {
		md = withKV{md, archNomicBERTMoE + "." + kv.suffix, gguf.Uint32(kv.v)}
	}
	want := readTransformersLogits(t, "nomicbertmoe")
	ref := readEncoderReference(t, "nomicbertmoe")
	for _, inverted := range []bool{false, true} {
		t.Run(map[bool]string{false: "file", true: "router inverted"}[inverted], func(t *testing.T) {
			c, err := ParseEncoderConfig(md)
			if err != nil {
				t.Fatal(err)
			}
			if c.Pooling != PoolingMean || c.MoEEvery != 2 || c.Experts != 4 || c.ExpertsUsed != 2 {
				t.Fatalf("pooling %v, MoE every %d, %d experts, %d used", c.Pooling, c.MoEEvery, c.Experts, c.ExpertsUsed)
			}
			e, err := LoadEncoder(c, GGUFWeights(f))
			if err != nil {
				t.Fatal(err)
			}
			if inverted {
				for i := range e.layers {
					for j, v := range e.layers[i].gateInp {
						e.layers[i].gateInp[j] = -v
					}
				}
			}
			least, pooled := runEncoder(t, e, want, c.Pooling)
			t.Logf("hidden states: least cosine %.8f; mean-pooled cosine %.8f", least, Cosine(pooled, ref.Pooled))
			if inverted {
				if !(least < 0.99999) {
					t.Errorf("least hidden state cosine %.7f: the broken router matches the reference", least)
				}
				return
			}
			if !(least >= 0.99999) {
				t.Errorf("least hidden state cosine %.7f < 0.99999", least)
			}
			checkPooled(t, PoolingMean, pooled, ref.Pooled)
		})
	}
}
