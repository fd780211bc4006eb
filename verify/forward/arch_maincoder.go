package forward

// maincoder (llama.cpp's src/models/maincoder.cpp): llama's block with
// NORM RoPE on the unpermuted Q and K and per-head q/k RMS norms after
// RoPE.
func init() {
	archs["maincoder"] = &archInfo{
		norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLU, qkNorm: true, qkNormAfterRope: true,
		sameHeadDims: true, rotIsHead: true,
		hparams: rmsEps,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dVGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}},
			{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}},
			ffnNormRule,
		}, gatedFFNRules(false)),
	}
}
