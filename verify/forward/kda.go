package forward

import (
	"context"
	"fmt"
	"math"
)

// Kimi Linear (src/models/kimi-linear.cpp): a hybrid of Kimi Delta
// Attention blocks (recurrent, head_count_kv 0) and MLA blocks without
// RoPE, each followed by a dense FFN (the leading blocks) or sigmoid-routed
// experts with a shared expert, as deepseek2's. A KDA block projects its
// input to Q, K and V (attn_q/k/v), each through its own causal depthwise
// convolution (ssm_conv1d_q/k/v, the conv state) and silu; Q and K are
// L2-normalised per head. Its decay is per channel: g = A_h ·
// softplus(f_b(f_a(x)) + dt_bias), and the state of head h decays by
// exp(g) along the key dimension before the delta rule (ggml_gated_delta_net
// with a gate of head_dim values, the deltaRule shared with Qwen3-Next);
// β = sigmoid(ssm_beta·x) per head. Each head's output is RMS-normalised
// (ssm_norm) and gated by sigmoid(g_b(g_a(x))) before attn_output.

// kimiLinearHparams mirrors llama_model_kimi_linear::load_arch_hparams: the
// MLA ranks and widths, the KDA head size and convolution kernel, the
// experts (shared count, leading dense blocks, scale, gating function
// required); build_moe_ffn normalises the routing weights, and the MLA
// blocks attend with 1/sqrt(n_embd_head_k_mla).
func kimiLinearHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	for _, k := range []struct {
		suffix string
		dst    *int
	}{{"attention.key_length_mla", &c.HeadDimKMLA}, {"attention.value_length_mla", &c.HeadDimVMLA},
		{"attention.kv_lora_rank", &c.KVLora}} {
		if _, err := r.u32(r.key(k.suffix), k.dst, true); err != nil {
			return err
		}
	}
	var dConv, headDim int
	if _, err := r.u32(r.key("ssm.conv_kernel"), &dConv, true); err != nil {
		return err
	}
	if _, err := r.u32(r.key("kda.head_dim"), &headDim, true); err != nil {
		return err
	}
	if dConv <= 1 || dConv > maxDim || headDim <= 0 || headDim > maxDim || c.Heads <= 0 || c.Heads > maxDim/headDim {
		return fmt.Errorf("%w: Kimi delta attention of %d heads of %d, conv kernel %d", ErrMetadata, c.Heads, headDim, dConv)
	}
	// Laid out as the delta net's (Q and K as Mamba-2's B and C, one group
	// per head), so that the conv state holds Q, K and V.
	c.rssm = &ssmConfig{mamba2: true, dConv: dConv, dInner: c.Heads * headDim, dState: headDim, dtRank: c.Heads, nGroup: c.Heads}
	if err := readSharedExperts(c, r); err != nil {
		return err
	}
	if err := readGating(c, r); err != nil {
		return err
	}
	c.ExpertWeightsNorm = true
	// The MLA cache: the latent and the rotated part as the key, the latent
	// as the value (value_length is not read).
	c.HeadDimV = c.KVLora
	if c.HeadsKV != 1 || c.KVLora <= 0 || c.KVLora > maxDim || c.HeadDimK != c.KVLora+c.Rot ||
		c.HeadDimKMLA <= c.Rot || c.HeadDimKMLA > maxDim || c.HeadDimVMLA <= 0 || c.HeadDimVMLA > maxDim {
		return fmt.Errorf("%w: kimi-linear MLA of %d key/value heads, rank %d, key width %d (MLA %d/%d), rope %d",
			ErrMetadata, c.HeadsKV, c.KVLora, c.HeadDimK, c.HeadDimKMLA, c.HeadDimVMLA, c.Rot)
	}
	return nil
}

// kda is a Kimi Delta Attention block on h (already normalised).
func (s *Session) kda(ctx context.Context, il int, l *layer, h [][]float32) ([][]float32, error) {
	c, g, ly := s.m.cfg, s.m.cfg.rssm, l.rec
	T, nh, hd, di := len(h), g.dtRank, g.dState, g.dInner
	qkv := rows(T, 3*di)
	q, k, v := rows(T, di), rows(T, di), rows(T, di)
	fa, gate := rows(T, hd), rows(T, di)
	ga, decay := rows(T, hd), rows(T, di)
	beta := rows(T, nh)
	for _, p := range []struct {
		w       *matrix
		in, out [][]float32
	}{{l.wq, h, q}, {l.wk, h, k}, {l.wv, h, v}, {ly.fA, h, fa}, {ly.fB, fa, decay},
		{ly.beta, h, beta}, {ly.gA, h, ga}, {ly.gB, ga, gate}} {
		if err := s.mul(ctx, p.w, nil, p.in, p.out); err != nil {
			return nil, err
		}
	}
	for t := range qkv {
		copy(qkv[t], q[t])
		copy(qkv[t][di:], k[t])
		copy(qkv[t][2*di:], v[t])
	}
	causalConv(s.recr.conv[il], ly.conv, g.dConv, qkv)
	scale := float32(1 / math.Sqrt(float64(hd)))
	y := rows(T, di)
	delta := make([]float32, hd)
	state := s.recr.scan[il] // [nh][hd (v)][hd (k)]
	for t := range qkv {
		for i, x := range qkv[t] {
			qkv[t][i] = silu(x)
		}
		qt, kt, vt := qkv[t][:di], qkv[t][di:2*di], qkv[t][2*di:]
		for i, x := range decay[t] {
			decay[t][i] = float32(math.Exp(float64(softplus(x+ly.dtB[i]) * ly.a[i/hd])))
		}
		for hh := range nh {
			sl := func(x []float32) []float32 { return x[hh*hd : (hh+1)*hd] }
			l2Norm(sl(qt), c.NormEps)
			l2Norm(sl(kt), c.NormEps)
			out := sl(y[t])
			deltaRule(state[hh*hd*hd:(hh+1)*hd*hd], sl(qt), sl(kt), sl(vt), sl(decay[t]), sigmoid(beta[t][hh]), scale, delta, out)
			rmsNorm(out, out, ly.ssmNorm, c.NormEps)
			for j, x := range sl(gate[t]) {
				out[j] *= sigmoid(x)
			}
		}
	}
	out := rows(T, c.Embd)
	if err := s.mul(ctx, l.wo, nil, y, out); err != nil {
		return nil, err
	}
	return out, nil
}

func init() {
	mla := concat([]rule{{name: "blk.%d.attn_q.weight", dims: []dim{dEmbd, dQMLA}}}, mlaKVRules)
	kda := []rule{
		{name: "blk.%d.attn_q.weight", dims: []dim{dEmbd, dRecInner}},
		{name: "blk.%d.attn_k.weight", dims: []dim{dEmbd, dRecInner}},
		{name: "blk.%d.attn_v.weight", dims: []dim{dEmbd, dRecInner}},
		{name: "blk.%d.ssm_conv1d_q.weight", dims: []dim{dRecConvK, dOne, dRecInner}},
		{name: "blk.%d.ssm_conv1d_k.weight", dims: []dim{dRecConvK, dOne, dRecInner}},
		{name: "blk.%d.ssm_conv1d_v.weight", dims: []dim{dRecConvK, dOne, dRecInner}},
		{name: "blk.%d.ssm_f_a.weight", dims: []dim{dEmbd, dRecState}},
		{name: "blk.%d.ssm_f_b.weight", dims: []dim{dRecState, dRecInner}},
		{name: "blk.%d.ssm_beta.weight", dims: []dim{dEmbd, dRecHeads}},
		{name: "blk.%d.ssm_a", dims: []dim{dOne, dRecHeads}},
		{name: "blk.%d.ssm_dt.bias", dims: []dim{dRecInner}},
		{name: "blk.%d.ssm_g_a.weight", dims: []dim{dEmbd, dRecState}},
		{name: "blk.%d.ssm_g_b.weight", dims: []dim{dRecState, dRecInner}},
		{name: "blk.%d.ssm_norm.weight", dims: []dim{dRecState}},
		{name: "blk.%d.attn_output.weight", dims: []dim{dRecInner, dEmbd}},
	}
	archs["kimi-linear"] = &archInfo{
		norm: normRMS, rope: ropeNone, ffn: ffnSwiGLU, mla: true,
		recurrentKV: true, recurrent: recKDA,
		moe:     moeInfo{kind: moeDeepseek},
		hparams: kimiLinearHparams,
		tensors: concat(headRules(false, false), []rule{
			{name: "output.weight", dims: []dim{dEmbd, dVocab}},
			attnNormRule,
			ffnNormRule,
			{name: "blk.%d.exp_probs_b.bias", dims: []dim{dExperts}, only: onlyMoE},
		}, scoped(mla, onlyAttn), scoped(kda, onlyRecurrent), dense(gatedFFNRules(false)), expertRules(false),
			sharedExpertRules(onlyMoE)),
	}
}
