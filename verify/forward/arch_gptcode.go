package forward

// GPT-2-named code models and openPangu-Embedded (src/models/codeshell.cpp,
// refact.cpp and pangu-embed.cpp of llama.cpp commit 0c1e570), rows of the
// architecture table.
func init() {
	// codeshell: LayerNorms with biases, a fused (GQA) QKV, NeoX RoPE on
	// the whole head, GELU FFN, biases everywhere, untied.
	archs["codeshell"] = &archInfo{
		norm: normLayer, rope: ropeNeox, ffn: ffnGELU,
		sameHeadDims: true, rotIsHead: true,
		hparams: layerNormEps,
		tensors: []rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output_norm.bias", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}},
			attnNormRule,
			{name: "blk.%d.attn_norm.bias", dims: []dim{dEmbd}},
			{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}},
			ffnNormRule,
			{name: "blk.%d.ffn_norm.bias", dims: []dim{dEmbd}},
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
			{name: "blk.%d.ffn_down.bias", dims: []dim{dEmbd}},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
			{name: "blk.%d.ffn_up.bias", dims: []dim{dFF}},
		},
	}
	// pangu-embedded: llama's block with NeoX RoPE, the attention output
	// bias required, Q/K/V and FFN biases optional, tied or untied.
	archs["pangu-embedded"] = &archInfo{
		norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU,
		sameHeadDims: true, rotIsHead: true,
		hparams: rmsEps,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}},
			ffnNormRule,
		}, gatedFFNRules(true)),
	}
	// refact: llama's block without RoPE, ALiBi in the soft-max (the
	// loader's fixed maximum bias 8), the attention output and FFN biases
	// optional.
	archs["refact"] = &archInfo{
		norm: normRMS, rope: ropeNone, ffn: ffnSwiGLU,
		sameHeadDims: true,
		hparams:      refactHparams,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}, optional: true},
			ffnNormRule,
		}, gatedFFNRules(true)),
	}
}

// refactHparams mirrors llama_model_refact::load_arch_hparams: the RMS
// epsilon, and f_max_alibi_bias 8 (no key in the file).
func refactHparams(c *Config, r *kvReader) error {
	c.MaxAlibiBias = 8
	return rmsEps(c, r)
}
