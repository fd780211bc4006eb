package forward

import (
	"context"
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

// Nemotron-H with routed experts (src/models/nemotron-h.cpp under
// nemotron_h_moe): every block is one of a Mamba-2 mixer (head_count_kv 0
// and feed_forward_length 0), attention without RoPE (feed_forward_length
// 0) or an FFN — routed relu² experts (up and down, no gate) chosen by a
// sigmoid router with a selection bias, plus an ungated relu² shared
// expert — each between attn_norm and the residual add.

// readBlockFF reads feed_forward_length as a soloBlocks architecture gives
// it, one width per block, 0 on the blocks without an FFN; the FFN blocks
// must share one width.
func (c *Config) readBlockFF(r *kvReader) error {
	key := r.key(gguf.SuffixFeedForwardLength)
	xs, err := r.perBlock(key, c.Layers, "one width per block (0 for a block without an FFN)")
	if err != nil {
		return err
	}
	c.FFNBlocks = make([]bool, c.Layers)
	for il, x := range xs {
		switch {
		case x == 0:
		case x < 0 || x > maxDim:
			return fmt.Errorf("%w: %s[%d] = %d", ErrMetadata, key, il, x)
		case c.FF != 0 && int(x) != c.FF:
			return fmt.Errorf("%w: %s differs between FFN blocks", ErrUnsupported, key)
		default:
			c.FF = int(x)
			c.FFNBlocks[il] = true
		}
	}
	return nil
}

// ffnBlock reports whether block il is an FFN-only block.
func (c *Config) ffnBlock(il int) bool { return il >= 0 && il < len(c.FFNBlocks) && c.FFNBlocks[il] }

// nemotronHMoEHparams mirrors llama_model_nemotron_h::load_arch_hparams:
// a block is recurrent when both its head_count_kv and its
// feed_forward_length are 0; layer_norm_epsilon is required (the RMS one
// falls back to it); the experts are sigmoid-gated (the graph's
// LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID) with the file's renormalisation,
// scale, groups and shared expert width.
func nemotronHMoEHparams(c *Config, r *kvReader) error {
	if _, err := r.f32(r.key("attention.layer_norm_epsilon"), &c.NormEps, true); err != nil {
		return err
	}
	if _, err := r.f32(r.key("attention.layer_norm_rms_epsilon"), &c.NormEps, false); err != nil {
		return err
	}
	for il := range c.Recurrent {
		c.Recurrent[il] = c.Recurrent[il] && !c.ffnBlock(il)
	}
	if err := readHybridSSM(c, r, true, false); err != nil {
		return err
	}
	var latent int
	if _, err := r.u32(r.key("moe_latent_size"), &latent, false); err != nil {
		return err
	}
	if latent != 0 {
		return fmt.Errorf("%w: %s latent expert projections (moe_latent_size %d)", ErrUnsupported, c.Arch, latent)
	}
	if c.Experts == 0 {
		return fmt.Errorf("%w: %s without experts (a dense Nemotron-H)", ErrUnsupported, c.Arch)
	}
	c.ExpertGating = 2
	if _, err := r.boolean(r.key("expert_weights_norm"), &c.ExpertWeightsNorm, false); err != nil {
		return err
	}
	if _, err := r.f32(r.key("expert_weights_scale"), &c.ExpertWeightsScale, false); err != nil {
		return err
	}
	if _, err := r.u32(r.key(gguf.SuffixExpertSharedFFLength), &c.FFShared, false); err != nil {
		return err
	}
	if c.FFShared <= 0 || c.FFShared > maxDim {
		return fmt.Errorf("%w: shared expert width %d", ErrMetadata, c.FFShared)
	}
	return readExpertGroups(c, r)
}

// soloLayer runs block il of a soloBlocks architecture on x (updated in
// place): x + mixer, attention or FFN of attn_norm(x).
func (s *Session) soloLayer(ctx context.Context, il int, x [][]float32) error {
	c, ly := s.m.cfg, &s.m.layers[il]
	h := rows(len(x), c.Embd)
	s.preNorm(h, x, ly.attnNorm, ly.attnNormB)
	var o [][]float32
	var err error
	switch {
	case c.recurrent(il):
		o, err = s.mixer()(ctx, il, ly, h)
	case c.ffnBlock(il):
		o = rows(len(x), c.Embd)
		err = s.ffn(ctx, ly, h, o)
	default:
		o, err = s.selfAttention(ctx, il, ly, h)
	}
	if err != nil {
		return err
	}
	for t := range o {
		for i, v := range o[t] {
			x[t][i] += v
		}
	}
	return nil
}

// relu2 is an ungated FFN: down(relu(up(x))²) (LLM_FFN_RELU_SQR).
func (s *Session) relu2(ctx context.Context, up, down *matrix, x, out [][]float32) error {
	u := rows(len(x), up.rows)
	if err := s.mul(ctx, up, nil, x, u); err != nil {
		return err
	}
	for _, r := range u {
		for i, v := range r {
			v = max(v, 0) // ggml_relu, then ggml_sqr
			r[i] = v * v
		}
	}
	return s.mul(ctx, down, nil, u, out)
}

func init() {
	archs["nemotron_h_moe"] = &archInfo{
		norm: normRMS, rope: ropeNone, ffn: ffnReLU2,
		sameHeadDims: true, recurrentKV: true, recurrent: recMamba, soloBlocks: true,
		moe:     moeInfo{kind: moeDeepseek, required: true},
		hparams: nemotronHMoEHparams,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}, only: onlyAttn},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}, only: onlyAttn},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}, only: onlyAttn, optional: true},
			{name: "blk.%d.ffn_gate_inp.weight", dims: []dim{dEmbd, dExperts}, only: onlyMoE},
			{name: "blk.%d.exp_probs_b.bias", dims: []dim{dExperts}, only: onlyMoE},
			{name: "blk.%d.ffn_up_exps.weight", dims: []dim{dEmbd, dFFExp, dExperts}, only: onlyMoE},
			{name: "blk.%d.ffn_down_exps.weight", dims: []dim{dFFExp, dEmbd, dExperts}, only: onlyMoE},
			{name: "blk.%d.ffn_up_shexp.weight", dims: []dim{dEmbd, dFFShared}, only: onlyMoE},
			{name: "blk.%d.ffn_down_shexp.weight", dims: []dim{dFFShared, dEmbd}, only: onlyMoE},
		}, mamba2Rules(onlyRecurrent, false)),
	}
}
