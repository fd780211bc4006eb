package forward

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

// granite_swa (llama.cpp's src/models/granite-swa.cpp): granite's block
// with attention sinks, interleaved sliding-window attention and an
// optional per-block rope pattern; routed experts with their gate and up
// fused, and a shared expert whose gate and up are one ffn_up_shexp.
func init() {
	archs["granite_swa"] = &archInfo{
		norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLU, ropeFactors: factorsFreqs, sinks: true,
		sameHeadDims: true, rotIsHead: true, sharedFused: true,
		moe:     moeInfo{kind: moeLlama},
		hparams: graniteSWAHparams,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}, optional: true},
			{name: "blk.%d.attn_sinks.weight", dims: []dim{dHeads}},
			ffnNormRule,
			{name: "rope_freqs.weight", dims: []dim{dRot2}, optional: true},
			{name: "blk.%d.ffn_gate_inp.weight", dims: []dim{dEmbd, dExperts}, only: onlyMoE},
			{gateUpExps: true, only: onlyMoE},
			{name: "blk.%d.ffn_down_exps.weight", dims: []dim{dFFExp, dEmbd, dExperts}, only: onlyMoE},
			{name: "blk.%d.ffn_up_shexp.weight", dims: []dim{dEmbd, dFFSh2}, only: onlyMoEShared},
			{name: "blk.%d.ffn_down_shexp.weight", dims: []dim{dFFShared, dEmbd}, only: onlyMoEShared},
		}, dense(gatedFFNRules(true))),
	}
}

// graniteSWAHparams mirrors llama_model_granite_swa::load_arch_hparams:
// granite-moe's scales (the logit scale required) and shared expert
// width, the sliding window and its per-block pattern (both required,
// the sliding blocks rotated as the others), and the optional rope
// pattern (false: a block without RoPE).
func graniteSWAHparams(c *Config, r *kvReader) error {
	if err := granitemoeHparams(c, r); err != nil {
		return err
	}
	key := r.key("attention.sliding_window_pattern")
	if v, ok := r.md.KV(key); !ok || !v.IsArray() {
		return fmt.Errorf("%w: %s is missing or not an array", ErrMetadata, key)
	}
	if err := c.readSWAPattern(r, 0); err != nil {
		return err
	}
	if _, err := r.u32(r.key("attention.sliding_window"), &c.SlidingWindow, true); err != nil {
		return err
	}
	// The graph rotates every block with the model's rope base and scale.
	c.RopeBaseSWA, c.RopeFreqScaleSWA = c.RopeBase, c.RopeFreqScale
	key = r.key("attention.rope_pattern")
	v, ok := r.md.KV(key)
	if !ok {
		return nil
	}
	pattern, isBools := v.Any().([]bool)
	if !v.IsArray() || v.ElemType() != gguf.TypeBool || !isBools || len(pattern) != c.Layers {
		return fmt.Errorf("%w: %s is not one bool per layer", ErrMetadata, key)
	}
	c.NoRope = make([]bool, c.Layers)
	for il, rope := range pattern {
		c.NoRope[il] = !rope
	}
	return nil
}
