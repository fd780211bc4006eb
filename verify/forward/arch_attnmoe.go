package forward

import (
	"fmt"
	"math"
)

// The families of issue 15 whose blocks are attention followed by an MLP
// or a mixture of experts, each a row of the architecture table built from
// the shared blocks (src/models/<arch>.cpp of llama.cpp commit 0c1e570).
func init() {
	for name, a := range map[string]*archInfo{
		// olmoe: Q/K norms over all heads at once, NeoX RoPE, soft-max
		// routing without renormalisation over experts of width n_ff.
		"olmoe": {
			norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, qkNormFull: true,
			sameHeadDims: true, rotIsHead: true,
			moe:     moeInfo{kind: moeLlama, required: true, plainW: true},
			hparams: rmsEps,
			tensors: concat(untiedHeadRules(), []rule{
				attnNormRule,
				{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
				{name: "blk.%d.attn_q_norm.weight", dims: []dim{dEmbd}},
				{name: "blk.%d.attn_k_norm.weight", dims: []dim{dEmbd}},
				ffnNormRule,
			}, expertRules(false)),
		},
		// granite (and granitemoe, below): llama's block with the embedding,
		// residual, attention and logit multipliers; experts of width n_ff,
		// renormalised, and GraniteMoeShared's ungated shared expert.
		"granite": {
			norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLU, ropeFactors: factorsFreqs,
			sameHeadDims: true, rotIsHead: true,
			moe:     moeInfo{kind: moeLlama},
			hparams: graniteHparams,
			tensors: concat(headRules(true, false), []rule{
				attnNormRule,
				{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
				{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}, optional: true},
				ffnNormRule,
				{name: "rope_freqs.weight", dims: []dim{dRot2}, optional: true},
			}, dense(gatedFFNRules(true)), expertRules(false), sharedExpertRules(onlyMoEShared)),
		},
		// ernie4_5 (and ernie4_5-moe, below): llama's block; the MoE variant
		// adds leading dense blocks, renormalised soft-max routing with an
		// optional selection bias, and an ungated shared expert.
		"ernie4_5": {
			norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLU,
			sameHeadDims: true, rotIsHead: true,
			hparams: ernieHparams,
			tensors: concat(headRules(true, false), []rule{
				attnNormRule,
				{qkv: true, dims: []dim{dEmbd, dQ, dVGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
				ffnNormRule,
			}, dense(gatedFFNRules(false)), expertRules(false), []rule{
				{name: "blk.%d.exp_probs_b.bias", dims: []dim{dExperts}, only: onlyMoE, optional: true},
			}, sharedExpertRules(onlyMoEShared)),
		},
		// minimax-m2: Q/K norms over all heads, partial NeoX RoPE, routing
		// by the stored gating function with a selection bias, renormalised.
		"minimax-m2": {
			norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, qkNormFull: true,
			sameHeadDims: true,
			moe:          moeInfo{kind: moeNormed, required: true},
			hparams:      minimaxM2Hparams,
			tensors: concat(untiedHeadRules(), []rule{
				{qkv: true, dims: []dim{dEmbd, dQ, dVGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
				attnNormRule,
				{name: "blk.%d.attn_q_norm.weight", dims: []dim{dQ}},
				{name: "blk.%d.attn_k_norm.weight", dims: []dim{dKGQA}},
				ffnNormRule,
			}, expertRules(false), []rule{
				{name: "blk.%d.exp_probs_b.bias", dims: []dim{dExperts}, only: onlyMoE},
			}),
		},
		// dots1: qwen3's attention (per-head Q/K norms, NeoX), deepseek's
		// routing (gating function, selection bias, scaled and optionally
		// renormalised weights, ungated shared experts) after dense blocks.
		"dots1": {
			norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, qkNorm: true,
			sameHeadDims: true, rotIsHead: true,
			moe:     moeInfo{kind: moeDeepseek, required: true},
			hparams: dots1Hparams,
			tensors: concat(untiedHeadRules(), []rule{
				attnNormRule,
				// create_tensor_qkv with n_head·head widths for K and V too.
				{qkv: true, dims: []dim{dEmbd, dQ, dQ, dQ}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
				{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}},
				{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}},
				ffnNormRule,
			}, dense(gatedFFNRules(false)), expertRules(false), []rule{
				{name: "blk.%d.exp_probs_b.bias", dims: []dim{dExperts}, only: onlyMoE, optional: true},
			}, sharedExpertRules(onlyMoE)),
		},
		// hunyuan-dense (llama_model_hunyuan_vl's loader and graph): per-head
		// Q/K norms after NeoX RoPE, the rope base scaled by rope.scaling.alpha.
		"hunyuan-dense": {
			norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, qkNorm: true, qkNormAfterRope: true,
			sameHeadDims: true, rotIsHead: true,
			hparams: hunyuanDenseHparams,
			tensors: concat(headRules(true, false), []rule{
				attnNormRule,
				{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
				{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}},
				{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}},
				ffnNormRule,
			}, gatedFFNRules(false)),
		},
		// arcee: llama's attention, an ungated ReLU² FFN.
		"arcee": {
			norm: normRMS, rope: ropeNorm, ffn: ffnReLU2, ropeFactors: factorsFreqs,
			sameHeadDims: true, rotIsHead: true,
			hparams: rmsEps,
			tensors: concat(headRules(true, false), []rule{
				attnNormRule,
				{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
				ffnNormRule,
				{name: "rope_freqs.weight", dims: []dim{dRot2}, optional: true},
				{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
				{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
			}),
		},
		// exaone4: no pre-norms; the attention and FFN outputs are
		// normalised before their residual adds; per-head Q/K norms before
		// NeoX RoPE; on the 32B (64 blocks) three sliding-window blocks of
		// four, RoPE on those only.
		"exaone4": {
			norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, ropeFactors: factorsFreqs, qkNorm: true, postNorms: true, noPreNorm: true,
			sameHeadDims: true, rotIsHead: true,
			hparams: exaone4Hparams,
			tensors: concat(headRules(true, false), []rule{
				{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
				{name: "rope_freqs.weight", dims: []dim{dRot2}, optional: true},
				{name: "blk.%d.post_attention_norm.weight", dims: []dim{dEmbd}},
				{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}},
				{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}},
			}, gatedFFNRules(false), []rule{
				{name: "blk.%d.post_ffw_norm.weight", dims: []dim{dEmbd}},
			}),
		},
		// smollm3: llama's block (NORM RoPE) without RoPE on every fourth.
		"smollm3": {
			norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLU,
			sameHeadDims: true, rotIsHead: true,
			hparams: smollm3Hparams,
			tensors: concat(headRules(true, false), []rule{
				attnNormRule,
				{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
				ffnNormRule,
			}, gatedFFNRules(false)),
		},
		// seed_oss: Q/K/V biases, NeoX RoPE, the FFN's pre-norm stored as
		// post_attention_norm.
		"seed_oss": {
			norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, ffnNormPostAttn: true,
			sameHeadDims: true, rotIsHead: true,
			hparams: rmsEps,
			tensors: concat(headRules(true, false), []rule{
				{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
				attnNormRule,
				{name: "blk.%d.post_attention_norm.weight", dims: []dim{dEmbd}},
			}, gatedFFNRules(false)),
		},
	} {
		archs[name] = a
	}
	// llama_model_granite_moe: granite's tensors and graph; its loader does
	// not read rope.scaling.finetuned.
	g := *archs["granite"]
	g.hparams = granitemoeHparams
	archs["granitemoe"] = &g
	e := *archs["ernie4_5"]
	e.moe = moeInfo{kind: moeNormed, required: true}
	e.hparams = ernieMoeHparams
	archs["ernie4_5-moe"] = &e
}

// untiedHeadRules are the embedding and a required output (no tying).
func untiedHeadRules() []rule {
	return []rule{
		{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
		{name: "output_norm.weight", dims: []dim{dEmbd}},
		{name: "output.weight", dims: []dim{dEmbd, dVocab}},
	}
}

// sharedExpertRules are an ungated shared expert of width FFShared.
func sharedExpertRules(only ruleScope) []rule {
	return []rule{
		{name: "blk.%d.ffn_gate_shexp.weight", dims: []dim{dEmbd, dFFShared}, only: only},
		{name: "blk.%d.ffn_down_shexp.weight", dims: []dim{dFFShared, dEmbd}, only: only},
		{name: "blk.%d.ffn_up_shexp.weight", dims: []dim{dEmbd, dFFShared}, only: only},
	}
}

// granitemoeHparams mirrors llama_model_granite_moe::load_arch_hparams:
// the logit scale (required; the graph divides the logits by it), the
// optional residual, embedding and attention multipliers, and
// GraniteMoeShared's expert_shared_feed_forward_length.
func granitemoeHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	return readGraniteScales(c, r, true)
}

// readGraniteScales reads granite's multipliers (the logit scale required
// or not; absent, the logits are not divided) and the shared expert's
// width.
func readGraniteScales(c *Config, r *kvReader, logitRequired bool) error {
	var logit, attn float32
	found, err := r.f32(r.key("logit_scale"), &logit, logitRequired)
	if err != nil {
		return err
	}
	if found && (logit == 0 || math.IsInf(float64(logit), 0) || math.IsNaN(float64(logit))) {
		return fmt.Errorf("%w: %s logit_scale %g", ErrMetadata, c.Arch, logit)
	}
	if found {
		c.LogitScale = 1 / logit // ggml_scale(cur, 1.0f/f_logit_scale)
	}
	if _, err := r.f32(r.key("residual_scale"), &c.ResidualScale, false); err != nil {
		return err
	}
	if _, err := r.f32(r.key("embedding_scale"), &c.EmbedScale, false); err != nil {
		return err
	}
	if _, err := r.f32(r.key("attention.scale"), &attn, false); err != nil {
		return err
	}
	if attn != 0 {
		c.AttnScale = attn
	}
	if _, err := r.u32(r.key("expert_shared_feed_forward_length"), &c.FFShared, false); err != nil {
		return err
	}
	if c.FFShared < 0 || c.FFShared > maxDim {
		return fmt.Errorf("%w: shared expert width %d", ErrMetadata, c.FFShared)
	}
	return nil
}

// graniteHparams mirrors llama_model_granite::load_arch_hparams: granite
// MoE's keys, and rope.scaling.finetuned (true unless given), which turns
// RoPE off on every block when false. Granite Vision's deepstack inputs
// only add image features.
func graniteHparams(c *Config, r *kvReader) error {
	if err := granitemoeHparams(c, r); err != nil {
		return err
	}
	return readRopeFinetuned(c, r)
}

// readRopeFinetuned reads granite's rope.scaling.finetuned (true unless
// given): false turns RoPE off on every block.
func readRopeFinetuned(c *Config, r *kvReader) error {
	finetuned := true
	if _, err := r.boolean(r.key("rope.scaling.finetuned"), &finetuned, false); err != nil {
		return err
	}
	if !finetuned {
		c.noRopeEvery(1)
	}
	return nil
}

// noRopeEvery marks every step-th block (il+1 a multiple of step) as
// having no RoPE (n_no_rope_layer_step).
func (c *Config) noRopeEvery(step int) {
	c.NoRope = make([]bool, c.Layers)
	for il := range c.NoRope {
		c.NoRope[il] = (il+1)%step == 0
	}
}

// ernieHparams mirrors llama_model_ernie4_5::load_arch_hparams for the
// dense model. PaddleOCR's rope.dimension_sections (M-RoPE) is not run.
func ernieHparams(c *Config, r *kvReader) error {
	if hasMRoPE(r) {
		return fmt.Errorf("%w: %s with M-RoPE sections", ErrUnsupported, c.Arch)
	}
	return rmsEps(c, r)
}

// ernieMoeHparams mirrors load_arch_hparams for ERNIE4_5_MOE: the expert
// width (required), the shared expert's width, the interleave step
// (required) and the leading dense blocks. llama.cpp's loader creates
// experts on every block after the dense ones while its graph routes only
// every n_moe_layer_step-th, so it runs only with a step of 1.
func ernieMoeHparams(c *Config, r *kvReader) error {
	if err := ernieHparams(c, r); err != nil {
		return err
	}
	if _, err := r.u32(r.key("expert_feed_forward_length"), new(int), true); err != nil {
		return err
	}
	if _, err := r.u32(r.key("expert_shared_feed_forward_length"), &c.FFShared, false); err != nil {
		return err
	}
	if c.FFShared < 0 || c.FFShared > maxDim {
		return fmt.Errorf("%w: shared expert width %d", ErrMetadata, c.FFShared)
	}
	if _, err := r.u32(r.key("interleave_moe_layer_step"), &c.MoEStep, true); err != nil {
		return err
	}
	if c.MoEStep != 1 {
		return fmt.Errorf("%w: %s interleave_moe_layer_step %d (llama.cpp's loader and graph agree only on 1)", ErrUnsupported, c.Arch, c.MoEStep)
	}
	if _, err := r.u32(r.key("leading_dense_block_count"), &c.DenseLead, false); err != nil {
		return err
	}
	if c.DenseLead > c.Layers {
		return fmt.Errorf("%w: %d leading dense blocks of %d", ErrMetadata, c.DenseLead, c.Layers)
	}
	return nil
}

// readGating reads expert_gating_func: without it (the default, none)
// llama.cpp's build_moe_ffn aborts, so the file is refused as llama.cpp
// would; of the others this package runs soft-max (1) and sigmoid (2).
func readGating(c *Config, r *kvReader) error {
	if _, err := r.u32(r.key("expert_gating_func"), &c.ExpertGating, false); err != nil {
		return err
	}
	switch c.ExpertGating {
	case 1, 2:
		return nil
	case 0:
		return fmt.Errorf("%w: %s has no %s (llama.cpp's build_moe_ffn aborts on expert gating function 0)", ErrMetadata, c.Arch, r.key("expert_gating_func"))
	}
	return fmt.Errorf("%w: %s expert gating function %d (soft-max 1 and sigmoid 2 are run)", ErrUnsupported, c.Arch, c.ExpertGating)
}

// minimaxM2Hparams mirrors llama_model_minimax_m2::load_arch_hparams: the
// expert width is required, but its loader shapes the experts by n_ff, as
// this package does; the gating function comes from the file.
func minimaxM2Hparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if _, err := r.u32(r.key("expert_feed_forward_length"), new(int), true); err != nil {
		return err
	}
	c.FFExp = c.FF
	return readGating(c, r)
}

// readSharedExperts reads what deepseek-style routing adds to the common
// MoE keys (glm4moe, dots1): the shared expert count (required; one FFN
// of their summed width), the leading dense blocks, and the routing
// weights' scale and renormalisation.
func readSharedExperts(c *Config, r *kvReader) error {
	if _, err := r.u32(r.key("expert_shared_count"), &c.ExpertShared, true); err != nil {
		return err
	}
	if c.ExpertShared < 0 || c.ExpertShared > maxDim/max(c.FFExp, 1) {
		return fmt.Errorf("%w: %d shared experts of width %d", ErrMetadata, c.ExpertShared, c.FFExp)
	}
	c.FFShared = c.ExpertShared * c.FFExp
	if _, err := r.u32(r.key("leading_dense_block_count"), &c.DenseLead, false); err != nil {
		return err
	}
	if c.DenseLead > c.Layers {
		return fmt.Errorf("%w: %d leading dense blocks of %d", ErrMetadata, c.DenseLead, c.Layers)
	}
	c.ExpertWeightsScale = 0
	if _, err := r.f32(r.key("expert_weights_scale"), &c.ExpertWeightsScale, false); err != nil {
		return err
	}
	_, err := r.boolean(r.key("expert_weights_norm"), &c.ExpertWeightsNorm, false)
	return err
}

// dots1Hparams mirrors llama_model_dots1::load_arch_hparams. The expert
// width is required, and so, in effect, is the gating function:
// convert_hf_to_gguf writes one only from a scoring_func the Dots1
// configs do not have, and build_moe_ffn aborts without it.
func dots1Hparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if _, err := r.u32(r.key("expert_feed_forward_length"), new(int), true); err != nil {
		return err
	}
	if err := readSharedExperts(c, r); err != nil {
		return err
	}
	if err := readExpertGroups(c, r); err != nil {
		return err
	}
	return readGating(c, r)
}

// hunyuanDenseHparams mirrors llama_model_hunyuan_vl::load_arch_hparams:
// with rope.scaling.alpha (XDRoPE's NTK-aware scaling) the rope base is
// multiplied by alpha^(d/(d−2)), d the head size. M-RoPE sections
// (HunyuanOCR) are not run.
func hunyuanDenseHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if hasMRoPE(r) {
		return fmt.Errorf("%w: %s with M-RoPE sections", ErrUnsupported, c.Arch)
	}
	var alpha float32
	if _, err := r.f32(r.key("rope.scaling.alpha"), &alpha, false); err != nil {
		return err
	}
	if alpha > 0 {
		d := float32(c.HeadDimK)
		c.RopeBase *= float32(math.Pow(float64(alpha), float64(d/(d-2))))
	}
	return nil
}

// exaone4Hparams mirrors llama_model_exaone4::load_arch_hparams: only the
// 64-block model (EXAONE 4.0 32B) has sliding-window blocks (pattern 4
// unless the file says otherwise, window 4096 unless given), and there
// RoPE is applied on the sliding-window blocks only. The NextN blocks
// after n_layer are loaded and not run.
func exaone4Hparams(c *Config, r *kvReader) error {
	if err := readNextN(c, r); err != nil {
		return err
	}
	window := &c.SlidingWindow
	if c.Layers == 64 {
		c.SlidingWindow = 4096
		if err := c.readSWAPattern(r, 4); err != nil {
			return err
		}
		c.RopeBaseSWA, c.RopeFreqScaleSWA = c.RopeBase, c.RopeFreqScale
		if _, err := r.f32(r.key("rope.freq_base_swa"), &c.RopeBaseSWA, false); err != nil {
			return err
		}
		c.ropeSWAOnly()
	} else {
		window = new(int) // read, and unused without sliding-window blocks
	}
	if _, err := r.u32(r.key("attention.sliding_window"), window, false); err != nil {
		return err
	}
	return rmsEps(c, r)
}

// ropeSWAOnly turns RoPE off on the blocks without a sliding window.
func (c *Config) ropeSWAOnly() {
	c.NoRope = make([]bool, c.Layers)
	for il := range c.NoRope {
		c.NoRope[il] = !c.SWA[il]
	}
}

// smollm3Hparams mirrors llama_model_smollm3::load_arch_hparams: no RoPE
// on every fourth block (n_no_rope_layer_step = 4).
func smollm3Hparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	c.noRopeEvery(4)
	return nil
}
