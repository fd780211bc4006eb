package forward

import "math"

// Older decoder families built from the shared blocks, each a row of the
// architecture table (src/models/<arch>.cpp of llama.cpp commit 0c1e570).
func init() {
	for name, a := range map[string]*archInfo{
		// nemotron: LayerNorms with biases (LayerNorm1P's +1 is in the
		// weights), NeoX RoPE on the first n_rot dimensions, an ungated
		// ReLU² FFN, optional attention-output and FFN biases.
		"nemotron": {
			norm: normLayer, rope: ropeNeox, ffn: ffnReLU2,
			sameHeadDims: true,
			hparams:      layerNormEps,
			tensors: []rule{
				{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
				{name: "output_norm.weight", dims: []dim{dEmbd}},
				{name: "output_norm.bias", dims: []dim{dEmbd}},
				{name: "output.weight", dims: []dim{dEmbd, dVocab}},
				attnNormRule,
				{name: "blk.%d.attn_norm.bias", dims: []dim{dEmbd}},
				{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
				{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}, optional: true},
				ffnNormRule,
				{name: "blk.%d.ffn_norm.bias", dims: []dim{dEmbd}},
				{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
				{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
				{name: "blk.%d.ffn_down.bias", dims: []dim{dEmbd}, optional: true},
				{name: "blk.%d.ffn_up.bias", dims: []dim{dFF}, optional: true},
			},
		},
		// orion: LayerNorms with biases, NeoX RoPE, llama's SwiGLU FFN.
		"orion": {
			norm: normLayer, rope: ropeNeox, ffn: ffnSwiGLU,
			sameHeadDims: true, rotIsHead: true,
			hparams: layerNormEps,
			tensors: concat([]rule{
				{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
				{name: "output_norm.weight", dims: []dim{dEmbd}},
				{name: "output_norm.bias", dims: []dim{dEmbd}},
				{name: "output.weight", dims: []dim{dEmbd, dVocab}},
				attnNormRule,
				{name: "blk.%d.attn_norm.bias", dims: []dim{dEmbd}},
				{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
				ffnNormRule,
				{name: "blk.%d.ffn_norm.bias", dims: []dim{dEmbd}},
			}, gatedFFNRules(false)),
		},
		// xverse: llama's block without options (NORM RoPE, SwiGLU), untied.
		"xverse": {
			norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLU,
			sameHeadDims: true, rotIsHead: true,
			hparams: rmsEps,
			tensors: concat(untiedHeadRules(), []rule{
				attnNormRule,
				{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
				{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
				ffnNormRule,
			}, gatedFFNRules(false)),
		},
	} {
		archs[name] = a
	}
	// minicpm: granite's graph (llama_model_minicpm uses
	// llama_model_granite::graph) with MiniCPM's defaults for the scales,
	// and LongRoPE's factors (MiniCPM4) beside rope_freqs.
	m := *archs["granite"]
	m.hparams = minicpmHparams
	m.ropeFactors = factorsLongShort
	m.tensors = concat(m.tensors, []rule{
		{name: "rope_factors_long.weight", dims: []dim{dRot2}, optional: true},
		{name: "rope_factors_short.weight", dims: []dim{dRot2}, optional: true},
	})
	archs["minicpm"] = &m
}

// minicpmHparams mirrors llama_model_minicpm::load_arch_hparams: the
// embedding scale 12, residual scale 1.4/√n_layer and logit scale
// 256/n_embd of older files, each replaced by its key when present.
func minicpmHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	c.EmbedScale = 12
	c.ResidualScale = float32(1.4 / math.Sqrt(float64(float32(c.Layers))))
	if c.Embd > 0 {
		c.LogitScale = 1 / (256 / float32(c.Embd))
	}
	return readGraniteScales(c, r, false)
}
