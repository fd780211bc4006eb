package verify

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize"
)

// randomLlama builds a llama of 256-wide rows (so 2-bit k- and i-quants
// apply, which stories260K's 64-wide rows never allow) with seeded
// random weights and stories260K's vocabulary.
func randomLlama(t *testing.T) *model {
	t.Helper()
	const (
		embd, ff, layers, heads, headsKV, vocab = 256, 256, 1, 4, 2, 512
	)
	m := &model{}
	for _, kv := range loadModel(t, storiesF32).kvs {
		if strings.HasPrefix(kv.Key, "tokenizer.") || kv.Key == gguf.KeyGeneralArchitecture {
			m.kvs = append(m.kvs, kv)
		}
	}
	for _, kv := range []struct {
		k string
		v uint32
	}{{"context_length", 256}, {"embedding_length", embd}, {"block_count", layers}, {"feed_forward_length", ff},
		{"attention.head_count", heads}, {"attention.head_count_kv", headsKV}} {
		m.setKV("llama."+kv.k, gguf.Uint32(kv.v))
	}
	m.setKV("llama.attention.layer_norm_rms_epsilon", gguf.Float32(1e-5))
	rng := rand.New(rand.NewPCG(8, 2))
	add := func(name string, norm bool, shape ...uint64) {
		n := 1
		for _, d := range shape {
			n *= int(d)
		}
		xs := make([]float32, n)
		for i := range xs {
			if norm {
				xs[i] = 1 + 0.1*float32(rng.NormFloat64())
			} else {
				xs[i] = float32(rng.NormFloat64()) / 16 // N(0, 1/fan_in) for fan_in 256
			}
		}
		ts := tensor{name: name, typ: gguf.F32, shape: shape, data: make([]byte, 4*n)}
		setF32s(&ts, xs)
		m.tensors = append(m.tensors, ts)
	}
	add("token_embd.weight", false, embd, vocab)
	add("output_norm.weight", true, embd)
	for il := 0; il < layers; il++ {
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", il, s) }
		add(b("attn_norm.weight"), true, embd)
		add(b("attn_q.weight"), false, embd, embd)
		add(b("attn_k.weight"), false, embd, embd*headsKV/heads)
		add(b("attn_v.weight"), false, embd, embd*headsKV/heads)
		add(b("attn_output.weight"), false, embd, embd)
		add(b("ffn_norm.weight"), true, embd)
		add(b("ffn_gate.weight"), false, embd, ff)
		add(b("ffn_up.weight"), false, embd, ff)
		add(b("ffn_down.weight"), false, ff, embd)
	}
	return m
}

// quantized returns a copy of an F32 model with every matrix in type typ.
func (m *model) quantized(t *testing.T, typ gguf.Type) *model {
	t.Helper()
	q := &model{kvs: slices.Clone(m.kvs)}
	for _, ts := range m.tensors {
		if len(ts.shape) < 2 {
			q.tensors = append(q.tensors, ts)
			continue
		}
		cols := int(ts.shape[0])
		rowSize, err := quantize.RowSize(typ, cols)
		if err != nil {
			t.Fatal(err)
		}
		var imatrix []float32
		if quantize.RequiresImatrix(typ) {
			imatrix = make([]float32, cols)
			for i := range imatrix {
				imatrix[i] = 1
			}
		}
		data := make([]byte, rowSize*int(ts.shape[1]))
		if err := quantize.Encode(typ, data, f32s(&ts), cols, imatrix); err != nil {
			t.Fatal(err)
		}
		q.tensors = append(q.tensors, tensor{ts.name, typ, slices.Clone(ts.shape), data})
	}
	return q
}

// TestQuantizedRandomLlama quantizes a model for real, to 2- and 3-bit
// types among others: verify reports each type's KL divergence against the
// F32 file and its thresholds (derived from the noise the measured tensor
// errors cause) accept every correct file, while the same file with two
// tensors swapped fails. On this random model the swap is one more random
// matrix among noisy ones: the forward pass alone tells it from the noise
// where the noise is small (Q6_K: 4 times its limit, Q8_0: 40 times);
// below, the tensor check does.
func TestQuantizedRandomLlama(t *testing.T) {
	f32 := randomLlama(t)
	ref := GGUFReference(open(t, f32.write(t)))
	opts := Options{Prompt: "Once upon a time, in a land far away", NPredict: 4}
	tests := []struct {
		typ gguf.Type
		// minError bounds the matrix error from below: the file's loss is
		// measured, not assumed.
		minError         float64
		forwardMustCatch bool
	}{
		{gguf.Q2_K, 0.2, false},
		{gguf.IQ2_XXS, 0.2, false},
		{gguf.Q3_K, 0.1, false},
		{gguf.Q4_K, 0.05, false},
		{gguf.Q6_K, 0.01, true},
		{gguf.Q8_0, 0.003, true},
	}
	for _, tc := range tests {
		t.Run(tc.typ.String(), func(t *testing.T) {
			q := f32.quantized(t, tc.typ)
			rep := run(t, open(t, q.write(t)), ref, opts)
			fw := rep.Forward
			if fw == nil {
				t.Fatalf("no forward pass: %v", rep.Problems)
			}
			t.Logf("matrix error %.3f: KL mean %.4g (limit %.4g, noise %.4g) max %.4g, top-1 %.3f",
				fw.MatrixError, fw.KLMean, fw.KLLimit, fw.NoiseKL, fw.KLMax, fw.Top1)
			if !rep.OK {
				t.Errorf("a correct %s quantization fails: %v", tc.typ, rep.Problems)
			}
			if fw.MatrixError < tc.minError || fw.KLMean <= KLFloor {
				t.Errorf("matrix error %.3g, KL %.3g: too small for %s", fw.MatrixError, fw.KLMean, tc.typ)
			}
			g, u := q.tensor(t, "blk.0.ffn_gate.weight"), q.tensor(t, "blk.0.ffn_up.weight")
			g.data, u.data = u.data, g.data
			broken := run(t, open(t, q.write(t)), ref, opts)
			t.Logf("swapped: KL %.4g (limit %.4g)", broken.Forward.KLMean, broken.Forward.KLLimit)
			if broken.OK || !hasCheck(broken.Problems, CheckReference) {
				t.Errorf("swapped tensors in a %s file: problems %v", tc.typ, broken.Problems)
			}
			if tc.forwardMustCatch && !hasCheck(broken.Problems, CheckForward) {
				t.Errorf("the forward check misses the swap: problems %v", broken.Problems)
			}
		})
	}
}
