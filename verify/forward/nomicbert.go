package forward

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

// archNomicBERT is Nomic BERT's general.architecture, archNomicBERTMoE
// its mixture-of-experts variant's (nomic-embed-text-v2-moe).
const (
	archNomicBERT    = "nomic-bert"
	archNomicBERTMoE = "nomic-bert-moe"
)

// parseNomicBERT reads what Nomic BERT adds to BERT's hyperparameters
// (llama.cpp's llama_model_nomic_bert runs BERT's graph with rotary
// positions): the head size, which must split the embedding evenly as the
// graph's fused projections assume, and the rotary base. Rotation covers
// the whole head (NeoX pairs); a file that says otherwise is refused.
func parseNomicBERT(r *kvReader, c *EncoderConfig) error {
	c.HeadDim = c.Embd / c.Heads
	for _, suffix := range []string{gguf.SuffixKeyLength, gguf.SuffixValueLength} {
		d := c.HeadDim
		if _, err := r.u32(r.key(suffix), &d, false); err != nil {
			return err
		}
		if d != c.HeadDim {
			return fmt.Errorf("%w: %s = %d, but %d heads split the embedding length %d into %d",
				ErrMetadata, r.key(suffix), d, c.Heads, c.Embd, c.HeadDim)
		}
	}
	return parseWholeHeadRope(r, c)
}

// parseNomicBERTMoE reads nomic-bert-moe's routing (llama_model_nomic_bert_moe
// and the common loader): moe_every_n_layers (0: no routed block), the
// expert count and the experts used.
func parseNomicBERTMoE(r *kvReader, c *EncoderConfig) error {
	if c.Arch != archNomicBERTMoE {
		return nil
	}
	if _, err := r.u32(r.key("moe_every_n_layers"), &c.MoEEvery, false); err != nil {
		return err
	}
	if c.MoEEvery == 0 {
		return nil
	}
	if _, err := r.u32(r.key(gguf.SuffixExpertCount), &c.Experts, true); err != nil {
		return err
	}
	if _, err := r.u32(r.key(gguf.SuffixExpertUsedCount), &c.ExpertsUsed, true); err != nil {
		return err
	}
	if c.Experts <= 0 || c.Experts > maxDim || c.ExpertsUsed <= 0 || c.ExpertsUsed > c.Experts {
		return fmt.Errorf("%w: %d experts, %d used", ErrMetadata, c.Experts, c.ExpertsUsed)
	}
	return nil
}

// moeLayer reports whether block il of a nomic-bert-moe model routes its
// feed-forward (bert.cpp: il % moe_every_n_layers == 1).
func (c *EncoderConfig) moeLayer(il int) bool { return c.MoEEvery > 0 && il%c.MoEEvery == 1 }

// moeFFN is bert.cpp's build_moe_ffn call for nomic-bert-moe: soft-max over
// the router's logits, the ExpertsUsed most probable experts (the first on
// ties) weighted by their probabilities as they are (no renormalisation,
// no scale), each a GELU MLP without biases. It writes the sum into out;
// h holds FF values.
func moeFFN(out []float32, L *encLayer, c *EncoderConfig, x, h []float32) {
	n, ff := len(x), c.FF
	probs := make([]float32, c.Experts)
	linear(probs, L.gateInp, nil, x)
	softmax(probs, 1)
	chosen := make([]bool, c.Experts)
	clear(out)
	y := make([]float32, n)
	for range c.ExpertsUsed {
		best := -1
		for e, p := range probs {
			if !chosen[e] && (best < 0 || p > probs[best]) {
				best = e
			}
		}
		chosen[best] = true
		linear(h, L.upExps[best*ff*n:(best+1)*ff*n], nil, x)
		for j, u := range h {
			h[j] = gelu(u)
		}
		linear(y, L.downExps[best*n*ff:(best+1)*n*ff], nil, h)
		for j, v := range y {
			out[j] += probs[best] * v
		}
	}
}
