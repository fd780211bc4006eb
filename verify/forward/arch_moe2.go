package forward

import (
	"context"
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
		// cohere2moe: llama_model_cohere2moe: cohere2's parallel block on
		// one weight-only norm (LayerNorm, or RMS when the file has an RMS
		// epsilon), RoPE on the sliding-window and leading dense blocks at
		// the one rope base, dense blocks then renormalised routing (sigmoid
		// unless given) and a shared expert averaged with the routed ones.
		"cohere2moe": {
			norm: normLayer, rope: ropeNorm, ffn: ffnSwiGLU, parallelResidual: true, sharedNorm: true,
			sameHeadDims: true, rotIsHead: true,
			moe:     moeInfo{kind: moeDeepseek, required: true, sharedAverage: true},
			hparams: cohere2MoeHparams,
			tensors: concat(headRules(true, false), []rule{
				attnNormRule,
				{qkv: true, dims: []dim{dEmbd, dQ, dVGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			}, dense(gatedFFNRules(false)), expertRules(false), sharedExpertRules(onlyMoEShared)),
		},
		// arctic: llama_model_arctic (Snowflake Arctic): llama's attention,
		// then a dense residual MLP of width n_embd beside soft-max routed
		// experts that read the block's input (residualMoE).
		"arctic": {
			norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLU, residualMoE: true,
			sameHeadDims: true, rotIsHead: true,
			moe:     moeInfo{kind: moeLlama, required: true},
			hparams: rmsEps,
			tensors: concat(headRules(true, false), []rule{
				attnNormRule,
				{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
				ffnNormRule,
				{name: "blk.%d.ffn_gate.weight", dims: []dim{dEmbd, dEmbd}},
				{name: "blk.%d.ffn_down.weight", dims: []dim{dEmbd, dEmbd}},
				{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dEmbd}},
				{name: "blk.%d.ffn_norm_exps.weight", dims: []dim{dEmbd}},
			}, expertRules(false)),
		},
		// bailingmoe2: llama_model_bailingmoe2 (Ling 2.0): the fused QKV,
		// per-head Q/K norms, partial NeoX RoPE, leading dense blocks, then
		// routing by the stored gating function with a selection bias,
		// renormalised and scaled, plus the shared expert. Its loader reads
		// no expert groups.
		"bailingmoe2": {
			norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, qkNorm: true,
			sameHeadDims: true,
			moe:          moeInfo{kind: moeDeepseek, required: true},
			hparams:      bailingMoe2Hparams,
			tensors: concat(untiedHeadRules(), []rule{
				attnNormRule,
				{name: "blk.%d.attn_qkv.weight", dims: []dim{dEmbd, dFusedQKV}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
				{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}},
				{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}},
				ffnNormRule,
			}, dense(gatedFFNRules(false)), expertRules(false), []rule{
				{name: "blk.%d.exp_probs_b.bias", dims: []dim{dExperts}, only: onlyMoE, optional: true},
			}, sharedExpertRules(onlyMoE)),
		},
		// grok: llama_model_grok (Grok-1): embeddings scaled, NeoX RoPE,
		// the scores scaled by attention.output_scale and soft-capped
		// (build_attn's Grok branch, then an unscaled soft-max), the
		// attention output normed before its residual, GELU experts routed
		// by renormalised soft-max and normed before theirs, logits scaled
		// (and soft-capped when final_logit_softcapping is set). Grok-2's
		// dense FFN beside the experts is not run.
		"grok": {
			norm: normRMS, rope: ropeNeox, ffn: ffnGeGLU, scaleQ: true, outNorms: true,
			sameHeadDims: true, rotIsHead: true,
			moe:     moeInfo{kind: moeLlama, required: true},
			hparams: grokHparams,
			tensors: concat(headRules(true, false), []rule{
				attnNormRule,
				{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
				{name: "blk.%d.attn_output_norm.weight", dims: []dim{dEmbd}},
				ffnNormRule,
				{name: "blk.%d.layer_output_norm.weight", dims: []dim{dEmbd}},
			}, expertRules(false)),
		},
	} {
		archs[name] = a
	}
}

// grokHparams mirrors llama_model_grok::load_arch_hparams: the RMS epsilon
// required; the logit, embedding and attention output scales and the
// attention and final soft-capping optional, with Grok-1's values as the
// defaults (30 for the attention's, none for the logits').
func grokHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	c.LogitScale, c.EmbedScale, c.AttnScale = 0.5773502691896257, 78.38367176906169, 0.08838834764831845
	c.AttnSoftcap, c.FinalSoftcap = 30, 0
	for _, k := range []struct {
		key string
		dst *float32
	}{
		{"logit_scale", &c.LogitScale}, {"embedding_scale", &c.EmbedScale}, {"attention.output_scale", &c.AttnScale},
		{"attn_logit_softcapping", &c.AttnSoftcap}, {"final_logit_softcapping", &c.FinalSoftcap},
	} {
		if _, err := r.f32(r.key(k.key), k.dst, false); err != nil {
			return err
		}
	}
	if c.AttnSoftcap == 0 {
		return fmt.Errorf("%w: %s attn_logit_softcapping 0 (the graph divides by it)", ErrMetadata, c.Arch)
	}
	return nil
}

// bailingMoe2Hparams mirrors llama_model_bailingmoe2::load_arch_hparams:
// the expert width, shared expert count and gating function are required,
// the leading dense blocks, the shared experts' width (else count × expert
// width), the weights' scale and renormalisation optional. The MTP blocks
// (nextn_predict_layers) are loaded and not run.
func bailingMoe2Hparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if err := readNextN(c, r); err != nil {
		return err
	}
	if _, err := r.u32(r.key("expert_feed_forward_length"), new(int), true); err != nil {
		return err
	}
	if err := readSharedExperts(c, r); err != nil {
		return err
	}
	if _, err := r.u32(r.key("expert_shared_feed_forward_length"), &c.FFShared, false); err != nil {
		return err
	}
	if c.FFShared <= 0 || c.FFShared > maxDim {
		return fmt.Errorf("%w: shared expert width %d", ErrMetadata, c.FFShared)
	}
	if _, err := r.u32(r.key("expert_gating_func"), &c.ExpertGating, true); err != nil {
		return err
	}
	return readGating(c, r)
}

// cohere2MoeHparams mirrors llama_model_cohere2moe::load_arch_hparams: an
// RMS epsilon makes the norms RMS norms (else the layer-norm epsilon is
// required); the sliding window, logit scale, leading dense blocks and
// expert width are required; the shared experts' count and width, the
// weights' renormalisation and scale optional; gating sigmoid unless
// given; the file's sliding-window pattern (else 3 of 4, dense blocks
// first). The graph rotates with the one rope base, on the sliding-window
// and the leading dense blocks only.
func cohere2MoeHparams(c *Config, r *kvReader) error {
	c.ParallelResidual = true
	rms, err := r.f32(r.key("attention.layer_norm_rms_epsilon"), &c.NormEps, false)
	if err != nil {
		return err
	}
	if rms {
		a := *c.arch
		a.norm = normRMS
		c.arch = &a
	} else if err := layerNormEps(c, r); err != nil {
		return err
	}
	if _, err := r.u32(r.key("attention.sliding_window"), &c.SlidingWindow, true); err != nil {
		return err
	}
	if _, err := r.f32(r.key("logit_scale"), &c.LogitScale, true); err != nil {
		return err
	}
	if _, err := r.u32(r.key("leading_dense_block_count"), &c.DenseLead, true); err != nil {
		return err
	}
	if c.DenseLead > c.Layers {
		return fmt.Errorf("%w: %d leading dense blocks of %d", ErrMetadata, c.DenseLead, c.Layers)
	}
	if _, err := r.u32(r.key("expert_feed_forward_length"), new(int), true); err != nil {
		return err
	}
	if _, err := r.u32(r.key("expert_shared_count"), &c.ExpertShared, false); err != nil {
		return err
	}
	if c.ExpertShared < 0 || c.ExpertShared > maxDim/max(c.FFExp, 1) {
		return fmt.Errorf("%w: %d shared experts of width %d", ErrMetadata, c.ExpertShared, c.FFExp)
	}
	c.FFShared = 0
	if c.ExpertShared > 0 {
		if _, err := r.u32(r.key("expert_shared_feed_forward_length"), &c.FFShared, false); err != nil {
			return err
		}
		if c.FFShared == 0 {
			c.FFShared = c.FFExp * c.ExpertShared
		}
		if c.FFShared < 0 || c.FFShared > maxDim {
			return fmt.Errorf("%w: shared expert width %d", ErrMetadata, c.FFShared)
		}
	}
	c.ExpertWeightsScale = 0
	if _, err := r.f32(r.key("expert_weights_scale"), &c.ExpertWeightsScale, false); err != nil {
		return err
	}
	if _, err := r.boolean(r.key("expert_weights_norm"), &c.ExpertWeightsNorm, false); err != nil {
		return err
	}
	if err := readGatingOr(c, r, 2); err != nil {
		return err
	}
	if err := c.readSWAPatternDenseFirst(r, 4); err != nil {
		return err
	}
	c.RopeBaseSWA, c.RopeFreqScaleSWA = c.RopeBase, c.RopeFreqScale
	c.NoRope = make([]bool, c.Layers)
	for il := range c.NoRope {
		c.NoRope[il] = !c.SWA[il] && il >= c.DenseLead
	}
	return nil
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

// readSWAPatternDenseFirst is load_swa_pattern with dense_first: a per-layer
// array as readSWAPattern reads it, else every n-th block from the first
// is global (n from the file, else the default).
func (c *Config) readSWAPatternDenseFirst(r *kvReader, n int) error {
	key := r.key("attention.sliding_window_pattern")
	if v, ok := r.md.KV(key); ok && v.IsArray() {
		return c.readSWAPattern(r, n)
	}
	if _, err := r.u32(key, &n, false); err != nil {
		return err
	}
	for il := range c.SWA {
		c.SWA[il] = n == 0 || il%n != 0
	}
	return nil
}

// residualMoE ends an arctic block: with x' = attn + x, the dense residual
// MLP on ffn_norm(x') and the experts on ffn_norm_exps(x), x becomes
// moe + (mlp + x'), in the graph's order of additions.
func (s *Session) residualMoE(ctx context.Context, ly *layer, x, attn [][]float32) error {
	c := s.m.cfg
	T := len(x)
	x1, h, hm := rows(T, c.Embd), rows(T, c.Embd), rows(T, c.Embd)
	for t := range x {
		for i, v := range attn[t] {
			x1[t][i] = v + x[t][i]
		}
		s.norm(h[t], x1[t], ly.ffnNorm, nil)
		s.norm(hm[t], x[t], ly.ffnNormExps, nil)
	}
	dense, moe := rows(T, c.Embd), rows(T, c.Embd)
	if err := s.swiglu(ctx, ly.gate, ly.up, ly.down, h, dense); err != nil {
		return err
	}
	if err := s.moe(ctx, ly, hm, moe); err != nil {
		return err
	}
	for t := range x {
		for i := range x[t] {
			x[t][i] = moe[t][i] + (dense[t][i] + x1[t][i])
		}
	}
	return nil
}
