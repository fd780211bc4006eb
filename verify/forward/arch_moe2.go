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
		// afmoe: llama_model_afmoe (Trinity): embeddings scaled by
		// sqrt(n_embd), per-head Q/K norms, NeoX RoPE on the sliding-window
		// blocks only (3 of 4), a sigmoid output gate from its own
		// projection before attn_output, post-attention and post-FFN norms,
		// leading dense blocks, then sigmoid routing with a selection bias,
		// renormalised and scaled, and an ungated shared expert.
		"afmoe": {
			norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, embedScale: true, qkNorm: true, postNorms: true,
			attnGate: true, sameHeadDims: true, rotIsHead: true,
			moe:     moeInfo{kind: moeDeepseek, required: true},
			hparams: afmoeHparams,
			tensors: concat(headRules(true, false), []rule{
				attnNormRule,
				{name: "blk.%d.post_attention_norm.weight", dims: []dim{dEmbd}},
				{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
				{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}},
				{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}},
				{name: "blk.%d.attn_gate.weight", dims: []dim{dEmbd, dQ}},
				ffnNormRule,
				{name: "blk.%d.post_ffw_norm.weight", dims: []dim{dEmbd}},
			}, dense(gatedFFNRules(false)), expertRules(false), []rule{
				{name: "blk.%d.exp_probs_b.bias", dims: []dim{dExperts}, only: onlyMoE},
			}, sharedExpertRules(onlyMoEShared)),
		},
	} {
		archs[name] = a
	}
}

// afmoeHparams mirrors llama_model_afmoe::load_arch_hparams: the expert
// width and shared expert count are required, the gating function is
// sigmoid unless given; with a sliding window, 3 of every 4 blocks slide
// (unless the file's pattern says otherwise) on the full blocks' rope
// unless rope.freq_base_swa; and RoPE is off on every fourth block
// (n_no_rope_layer_step's default 4).
func afmoeHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if err := readSharedExperts(c, r); err != nil {
		return err
	}
	if err := readGatingOr(c, r, 2); err != nil {
		return err
	}
	found, err := r.u32(r.key("attention.sliding_window"), &c.SlidingWindow, false)
	if err != nil {
		return err
	}
	if found && c.SlidingWindow > 0 {
		if err := c.readSWAPattern(r, 4); err != nil {
			return err
		}
		c.RopeBaseSWA, c.RopeFreqScaleSWA = c.RopeBase, c.RopeFreqScale
		if _, err := r.f32(r.key("rope.freq_base_swa"), &c.RopeBaseSWA, false); err != nil {
			return err
		}
	} else {
		c.SlidingWindow = 0
	}
	c.noRopeEvery(4)
	return nil
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
