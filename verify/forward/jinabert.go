package forward

import (
	"fmt"
	"math"
)

// archJinaBERTv2 is Jina BERT v2's general.architecture.
const archJinaBERTv2 = "jina-bert-v2"

// jinaMaxAlibiBias is llama_model_jina_bert_v2::load_arch_hparams's
// f_max_alibi_bias: the file has no key for it.
const jinaMaxAlibiBias = 8

// alibiSlopes are ggml_soft_max_ext's per-head ALiBi slopes for max bias
// b: m0^(h+1) for the first n_head_log2 heads (the power of two at or
// below n), m1^(2(h−n_head_log2)+1) for the others, with m0 =
// 2^(−b/n_head_log2) and m1 = 2^(−b/2/n_head_log2).
func alibiSlopes(heads int, maxBias float64) []float32 {
	log2 := 1 << int(math.Floor(math.Log2(float64(heads))))
	m0 := float32(math.Pow(2, -maxBias/float64(log2)))
	m1 := float32(math.Pow(2, -maxBias/2/float64(log2)))
	s := make([]float32, heads)
	for h := range s {
		if h < log2 {
			s[h] = float32(math.Pow(float64(m0), float64(h+1)))
		} else {
			s[h] = float32(math.Pow(float64(m1), float64(2*(h-log2)+1)))
		}
	}
	return s
}

// checkJinaBERTv2 refuses the optional tensors of llama.cpp's Jina BERT v2
// graph this package does not run (the Q/K layer norms and the second
// attention norm of some Jina v2 variants, a separate GELU gate beside
// ffn_up, which the converter does not write), naming the first found.
func checkJinaBERTv2(c *EncoderConfig, w Weights) error {
	for il := range c.Layers {
		for _, s := range []string{"attn_q_norm.weight", "attn_k_norm.weight", "attn_norm_2.weight", "ffn_gate.weight"} {
			name := fmt.Sprintf("blk.%d.%s", il, s)
			if _, ok := w.Tensor(name); ok {
				return fmt.Errorf("%w: %s (a Jina BERT v2 variant verify/forward does not run)", ErrUnsupported, name)
			}
		}
	}
	return nil
}
