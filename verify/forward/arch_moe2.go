package forward

import (
	"fmt"
	"math"
)

// More mixture-of-experts families, each a row of the architecture table
// built from the shared blocks (src/models/<arch>.cpp of llama.cpp commit
// 0c1e570).
func init() {
	for name, a := range map[string]*archInfo{
		// phimoe: llama_model_phimoe runs phi3's graph: RMS norms with a
		// bias (LLM_NORM_RMS given both tensors), NeoX RoPE with the
		// LongRoPE factors, Q scaled before the soft-max, biased
		// projections and output, renormalised soft-max routing over
		// experts of width n_ff.
		"phimoe": {
			norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, ropeFactors: factorsLongShort, scaleQ: true,
			sameHeadDims: true,
			moe:          moeInfo{kind: moeLlama, required: true},
			hparams:      phi3Hparams,
			tensors: concat(untiedHeadRules(), []rule{
				{name: "output_norm.bias", dims: []dim{dEmbd}},
				{name: "output.bias", dims: []dim{dVocab}},
				{name: "rope_factors_long.weight", dims: []dim{dRot2}, optional: true},
				{name: "rope_factors_short.weight", dims: []dim{dRot2}, optional: true},
				attnNormRule,
				{name: "blk.%d.attn_norm.bias", dims: []dim{dEmbd}},
				{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
				{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}},
				ffnNormRule,
				{name: "blk.%d.ffn_norm.bias", dims: []dim{dEmbd}},
			}, expertRules(false)),
		},
		// dbrx: llama_model_dbrx: LayerNorms with a weight only, the fused
		// QKV clamped to ±clamp_kqv, NeoX RoPE, attn_output_norm before
		// renormalised soft-max routing over experts of width n_ff.
		"dbrx": {
			norm: normLayer, rope: ropeNeox, ffn: ffnSwiGLU,
			sameHeadDims: true, rotIsHead: true,
			moe:     moeInfo{kind: moeLlama, required: true},
			hparams: dbrxHparams,
			tensors: concat(untiedHeadRules(), []rule{
				attnNormRule,
				{name: "blk.%d.attn_qkv.weight", dims: []dim{dEmbd, dFusedQKV}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
				{name: "blk.%d.attn_output_norm.weight", dims: []dim{dEmbd}},
			}, expertRules(false)),
		},
	} {
		archs[name] = a
	}
}

// dbrxHparams mirrors llama_model_dbrx::load_arch_hparams: the layer-norm
// epsilon and clamp_kqv are both required.
func dbrxHparams(c *Config, r *kvReader) error {
	if err := layerNormEps(c, r); err != nil {
		return err
	}
	if _, err := r.f32(r.key("attention.clamp_kqv"), &c.ClampKQV, true); err != nil {
		return err
	}
	if c.ClampKQV < 0 || math.IsNaN(float64(c.ClampKQV)) {
		return fmt.Errorf("%w: %s clamp_kqv %g", ErrMetadata, c.Arch, c.ClampKQV)
	}
	return nil
}
