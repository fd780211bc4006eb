package forward

import (
	"fmt"
	"testing"
)

// standIns serves zero tensors under names the model lacks.
type standIns struct {
	Weights
	extra map[string]*memTensor
}

func (w standIns) Tensor(name string) (Tensor, bool) {
	if t, ok := w.Weights.Tensor(name); ok {
		return t, true
	}
	t, ok := w.extra[name]
	return t, ok
}

// TestGemma3n compares the gemma3n fixture's logits with transformers'.
// llama.cpp fixes gemma3n's sizes to E2B/E4B's (LAuReL rank 64, per-layer
// width 256, KV shared from block 20, activation sparsity on blocks 0–9)
// and so would refuse this fixture's tensors; the test gives the fixture's
// own (laurel_rank 4, hidden_size_per_layer_input 8, 2 of 4 blocks
// KV-shared, sparsity on 2). llama.cpp also requires attn_k, attn_v and attn_k_norm on the
// KV-shared blocks, which it never reads and transformers 5 no longer
// saves: zero stand-ins take their place.
//
// llama.cpp's activation sparsity cuts at mean + 1.645·std with the
// standard deviation over n − 1, transformers' over n (unbiased=False):
// 5.1e-3 of the largest logit here. With transformers' standard deviation
// the logits agree to 1.2e-4, ggml's fp16 GELU (three per block; 5.5e-7
// with transformers' GELU swapped in).
func TestGemma3n(t *testing.T) {
	sizes := func(c *Config) {
		c.g3n.laurelRank, c.g3n.perLayer, c.g3n.kvFrom, c.g3n.sparseLayers = 4, 8, 2, 2
	}
	populationStd := func(c *Config) {
		sizes(c)
		c.g3n.populationStd = true
	}
	kv := func(w Weights) Weights {
		extra := map[string]*memTensor{}
		for il := 2; il < 4; il++ {
			for _, n := range []string{"attn_k", "attn_v"} {
				extra[fmt.Sprintf("blk.%d.%s.weight", il, n)] = &memTensor{shape: []int64{64, 16}, data: make([]float32, 64*16)}
			}
			extra[fmt.Sprintf("blk.%d.attn_k_norm.weight", il)] = &memTensor{shape: []int64{16}, data: make([]float32, 16)}
		}
		return standIns{w, extra}
	}
	t.Run("llama.cpp", func(t *testing.T) { checkFamily(t, "gemma3n", "gemma3n", 1e-2, nil, sizes, kv) })
	t.Run("population std", func(t *testing.T) { checkFamily(t, "gemma3n", "gemma3n", 5e-4, nil, populationStd, kv) })
}
