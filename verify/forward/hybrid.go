package forward

import (
	"context"
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

// Hybrids: models whose blocks are attention blocks or recurrent blocks,
// each followed by the block's FFN (llama.cpp's llama_memory_hybrid
// models). The recurrent blocks here are lfm2's gated short convolutions
// (src/models/lfm2.cpp): in_proj splits into B, C and x, a causal
// depthwise convolution runs over B·x (its last l_cache − 1 inputs are the
// state), and C gates the result before out_proj. The attention blocks use
// the ordinary path; a Session keeps the tokens it has seen and rebuilds
// the recurrent state when it is cut back.

// recKind is the kind of a hybrid's recurrent blocks.
type recKind uint8

const (
	recNone      recKind = iota
	recShortConv         // lfm2's gated short convolution (hybrid.go)
	recDeltaNet          // the gated delta net (deltanet.go)
	recMamba             // Mamba or Mamba-2 (ssm.go)
	recKDA               // Kimi Delta Attention (kda.go)
)

// mixer is the function running a block's recurrent mixer.
func (s *Session) mixer() func(ctx context.Context, il int, ly *layer, h [][]float32) ([][]float32, error) {
	switch s.m.cfg.arch.recurrent {
	case recDeltaNet:
		return s.deltaNet
	case recKDA:
		return s.kda
	case recMamba:
		return func(ctx context.Context, il int, ly *layer, h [][]float32) ([][]float32, error) {
			return s.mamba(ctx, s.m.cfg.rssm, ly.rec, s.recr.conv[il], s.recr.scan[il], h)
		}
	}
	return s.shortConv
}

// recurrent reports whether block il is recurrent.
// (Recurrent may cover the MTP blocks too).
func (c *Config) recurrent(il int) bool { return il < len(c.Recurrent) && c.Recurrent[il] }

// readRecurrentKV reads head_count_kv as llama.cpp's hybrids do: one count
// per block, 0 marking a recurrent block (is_recr_impl). The attention
// blocks must share one count.
func (c *Config) readRecurrentKV(r *kvReader) error {
	key := r.key(gguf.SuffixHeadCountKV)
	xs, err := r.perBlock(key, c.Layers, "one count per block (0 for a recurrent block)")
	if err != nil {
		return err
	}
	c.Recurrent = make([]bool, c.Layers)
	kv := 0
	for il, x := range xs {
		switch {
		case x == 0:
			c.Recurrent[il] = true
		case x < 0 || x > maxDim:
			return fmt.Errorf("%w: %s[%d] = %d", ErrMetadata, key, il, x)
		case kv != 0 && int(x) != kv:
			return fmt.Errorf("%w: %s differs between attention blocks", ErrUnsupported, key)
		default:
			kv = int(x)
		}
	}
	if kv != 0 {
		c.HeadsKV = kv
	}
	return nil
}

// perBlock reads key as an array of n integers, one per block (must says
// what it holds when it is missing or not an array).
func (r *kvReader) perBlock(key string, n int, must string) ([]int64, error) {
	v, ok := r.md.KV(key)
	if !ok || !v.IsArray() {
		return nil, fmt.Errorf("%w: %s must give %s", ErrMetadata, key, must)
	}
	if e := v.ElemType(); e != gguf.TypeUint32 && e != gguf.TypeInt32 {
		return nil, fmt.Errorf("%w: %s has wrong array element type %s", ErrMetadata, key, e)
	}
	xs, _ := v.Ints()
	if len(xs) != n {
		return nil, fmt.Errorf("%w: key %s has wrong array length; expected %d, got %d", ErrMetadata, key, n, len(xs))
	}
	return xs, nil
}

// recurrentState is a session's recurrent state (a hybrid's, or a Mamba
// model's): per block the last inputs of its convolution and its scan
// state, plus the tokens evaluated (to rebuild the state after a Truncate).
type recurrentState struct {
	conv, scan [][]float32
	replayLog
}

func newRecurrentState(c *Config) *recurrentState {
	st := &recurrentState{conv: make([][]float32, c.Layers), scan: make([][]float32, c.Layers)}
	for il := range st.conv {
		switch {
		case !c.recurrent(il):
		case c.arch.recurrent == recDeltaNet || c.arch.recurrent == recKDA:
			g := c.rssm
			st.conv[il] = make([]float32, (g.dConv-1)*g.convDim())
			st.scan[il] = make([]float32, g.dtRank*g.dState*g.dState)
		case c.arch.recurrent == recMamba:
			g := c.rssm
			st.conv[il] = make([]float32, (g.dConv-1)*g.convDim())
			st.scan[il] = make([]float32, g.dInner*g.dState)
		default:
			st.conv[il] = make([]float32, (c.ShortConv-1)*c.Embd)
		}
	}
	return st
}

// replay rebuilds a stale recurrent state (and any attention cache) from
// the tokens the session keeps.
func (s *Session) replay(ctx context.Context) error {
	st := s.recr
	kept := st.tokens[:s.n]
	for il := range st.conv {
		clear(st.conv[il])
		clear(st.scan[il])
	}
	st.tokens, st.stale, s.n = nil, false, 0
	if len(kept) == 0 {
		return nil
	}
	_, err := s.Eval(ctx, kept, false)
	return err
}

// shortConv is lfm2's recurrent block on h (already normalised): out_proj(C
// · conv(B · x)).
func (s *Session) shortConv(ctx context.Context, il int, l *layer, h [][]float32) ([][]float32, error) {
	c, ly := s.m.cfg, l.rec
	T, e := len(h), c.Embd
	bcx := rows(T, 3*e)
	if err := s.mul(ctx, ly.in, nil, h, bcx); err != nil {
		return nil, err
	}
	bx := rows(T, e)
	for t := range bcx {
		b, x := bcx[t][:e], bcx[t][2*e:]
		for i := range bx[t] {
			bx[t][i] = b[i] * x[i]
		}
	}
	causalConv(s.recr.conv[il], ly.conv, c.ShortConv, bx)
	for t := range bx {
		cg := bcx[t][e : 2*e]
		for i := range bx[t] {
			bx[t][i] *= cg[i]
		}
	}
	out := rows(T, e)
	if err := s.mul(ctx, ly.out, nil, bx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// lfm2Hparams mirrors llama_model_lfm2(moe)::load_arch_hparams.
func lfm2Hparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if _, err := r.u32(r.key("shortconv.l_cache"), &c.ShortConv, true); err != nil {
		return err
	}
	if c.ShortConv <= 1 || c.ShortConv > maxDim {
		// build_shortconv_block's GGML_ASSERT(n_shortconv_l_cache > 1).
		return fmt.Errorf("%w: %s = %d (must be 2..%d)", ErrMetadata, r.key("shortconv.l_cache"), c.ShortConv, maxDim)
	}
	if c.Experts == 0 {
		c.DenseLead = c.Layers // n_layer_dense_lead = n_layer
		return nil
	}
	if _, err := r.u32(r.key("leading_dense_block_count"), &c.DenseLead, false); err != nil {
		return err
	}
	if c.DenseLead > c.Layers {
		return fmt.Errorf("%w: %d leading dense blocks of %d", ErrMetadata, c.DenseLead, c.Layers)
	}
	c.ExpertWeightsNorm = true // build_moe_ffn(…, norm_w = true, …)
	if _, err := r.f32(r.key("expert_weights_scale"), &c.ExpertWeightsScale, false); err != nil {
		return err
	}
	return readGating(c, r)
}

// lfm2Rules are lfm2's and lfm2moe's tensors: attention blocks with Q/K
// norms, short-convolution blocks, a dense or routed FFN on each.
func lfm2Rules(moe bool) []rule {
	rs := []rule{
		{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
		{name: "token_embd_norm.weight", dims: []dim{dEmbd}},
		{name: "output.weight", dims: []dim{dEmbd, dVocab}, optional: true},
		ffnNormRule,
	}
	rs = append(rs, dense(gatedFFNRules(false))...)
	if moe {
		rs = append(rs, expertRules(false)...)
		rs = append(rs, rule{name: "blk.%d.exp_probs_b.bias", dims: []dim{dExperts}, only: onlyMoE})
	}
	return append(rs,
		attnNormRule,
		rule{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}, only: onlyAttn},
		rule{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}, only: onlyAttn},
		rule{qkv: true, dims: []dim{dEmbd, dEmbd, dKGQA, dVGQA}, only: onlyAttn},
		rule{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}, only: onlyAttn},
		rule{name: "blk.%d.shortconv.conv.weight", dims: []dim{dConvL, dEmbd}, only: onlyRecurrent},
		rule{name: "blk.%d.shortconv.in_proj.weight", dims: []dim{dEmbd, dEmbd3}, only: onlyRecurrent},
		rule{name: "blk.%d.shortconv.out_proj.weight", dims: []dim{dEmbd, dEmbd}, only: onlyRecurrent},
	)
}

func init() {
	for name, moe := range map[string]bool{"lfm2": false, "lfm2moe": true} {
		a := &archInfo{
			norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, qkNorm: true,
			sameHeadDims: true, rotIsHead: true, recurrentKV: true, recurrent: recShortConv,
			hparams: lfm2Hparams,
			tensors: lfm2Rules(moe),
		}
		if moe {
			a.moe = moeInfo{kind: moeDeepseek, required: true}
		}
		archs[name] = a
	}
}

// graniteHybridHparams mirrors llama_model_granite_hybrid::load_arch_hparams:
// granite's multipliers (the logit scale optional: Bamba has none), the
// shared expert's width, the Mamba-2 sizes, and rope.scaling.finetuned
// (default true; false turns RoPE off on every block).
func graniteHybridHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if err := readGraniteScales(c, r, false); err != nil {
		return err
	}
	if err := readHybridSSM(c, r, true, true); err != nil {
		return err
	}
	return readRopeFinetuned(c, r)
}

// readHybridSSM reads a hybrid's Mamba or Mamba-2 sizes; with expand2 its
// loader supports only an expansion factor of 2 (d_inner = 2·n_embd).
func readHybridSSM(c *Config, r *kvReader, mamba2, expand2 bool) error {
	g, err := readSSMSizes(r, mamba2)
	if err != nil {
		return err
	}
	if expand2 && g.dInner != 2*c.Embd {
		return fmt.Errorf("%w: %s = %d: only an expansion factor of 2 is supported (2 × %d)", ErrMetadata, r.key("ssm.inner_size"), g.dInner, c.Embd)
	}
	c.rssm = g
	return nil
}

// mamba2Rules are a hybrid's Mamba-2 blocks (their conv bias optional,
// and with optNorm their grouped norm).
func mamba2Rules(only ruleScope, optNorm bool) []rule {
	return []rule{
		{name: "blk.%d.ssm_in.weight", dims: []dim{dEmbd, dRecIn2}, only: only},
		{name: "blk.%d.ssm_conv1d.weight", dims: []dim{dRecConvK, dRecConv}, only: only},
		{name: "blk.%d.ssm_conv1d.bias", dims: []dim{dRecConv}, only: only, optional: true},
		{name: "blk.%d.ssm_dt.bias", dims: []dim{dRecHeads}, only: only},
		{name: "blk.%d.ssm_a", dims: []dim{dOne, dRecHeads}, only: only},
		{name: "blk.%d.ssm_d", dims: []dim{dOne, dRecHeads}, only: only},
		{name: "blk.%d.ssm_norm.weight", dims: []dim{dRecGroupW, dRecGroups}, only: only, optional: optNorm},
		{name: "blk.%d.ssm_out.weight", dims: []dim{dRecInner, dEmbd}, only: only},
	}
}

func init() {
	// granitehybrid (Granite 4.0, Bamba): granite's attention blocks and
	// FFNs (dense, or experts with an ungated shared expert) with Mamba-2
	// blocks where head_count_kv is 0.
	archs["granitehybrid"] = &archInfo{
		norm: normRMS, rope: ropeNorm, ffn: ffnSwiGLU, ropeFactors: factorsFreqs,
		sameHeadDims: true, recurrentKV: true, recurrent: recMamba,
		moe:     moeInfo{kind: moeLlama},
		hparams: graniteHybridHparams,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}, only: onlyAttn},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}, only: onlyAttn},
			{name: "blk.%d.attn_output.bias", dims: []dim{dEmbd}, only: onlyAttn, optional: true},
			ffnNormRule,
			{name: "rope_freqs.weight", dims: []dim{dRot2}, optional: true},
		}, mamba2Rules(onlyRecurrent, false), dense(gatedFFNRules(true)), expertRules(false), sharedExpertRules(onlyMoEShared)),
	}
}

// jambaHparams mirrors llama_model_jamba::load_arch_hparams: the Mamba
// sizes (an expansion factor of 2 only).
func jambaHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	return readHybridSSM(c, r, false, true)
}

func init() {
	// jamba: attention blocks without RoPE, Mamba blocks with normalised
	// Δ, B and C where head_count_kv is 0; a block routes its FFN (soft-max
	// top-k, weights not renormalised) when it has ffn_gate_inp.
	archs["jamba"] = &archInfo{
		norm: normRMS, rope: ropeNone, ffn: ffnSwiGLU,
		sameHeadDims: true, recurrentKV: true, recurrent: recMamba,
		moe:     moeInfo{kind: moeLlama, plainW: true},
		hparams: jambaHparams,
		tensors: concat(headRules(true, false), []rule{
			attnNormRule,
			{name: "blk.%d.ssm_in.weight", dims: []dim{dEmbd, dRecInner2}, only: onlyRecurrent},
			{name: "blk.%d.ssm_conv1d.weight", dims: []dim{dRecConvK, dRecConv}, only: onlyRecurrent},
			{name: "blk.%d.ssm_conv1d.bias", dims: []dim{dRecConv}, only: onlyRecurrent},
			{name: "blk.%d.ssm_x.weight", dims: []dim{dRecInner, dRecX}, only: onlyRecurrent},
			{name: "blk.%d.ssm_dt_norm.weight", dims: []dim{dRecHeads}, only: onlyRecurrent},
			{name: "blk.%d.ssm_dt.weight", dims: []dim{dRecHeads, dRecInner}, only: onlyRecurrent},
			{name: "blk.%d.ssm_dt.bias", dims: []dim{dRecInner}, only: onlyRecurrent},
			{name: "blk.%d.ssm_b_norm.weight", dims: []dim{dRecState}, only: onlyRecurrent},
			{name: "blk.%d.ssm_c_norm.weight", dims: []dim{dRecState}, only: onlyRecurrent},
			{name: "blk.%d.ssm_a", dims: []dim{dRecState, dRecInner}, only: onlyRecurrent},
			{name: "blk.%d.ssm_d", dims: []dim{dRecInner}, only: onlyRecurrent},
			{name: "blk.%d.ssm_out.weight", dims: []dim{dRecInner, dEmbd}, only: onlyRecurrent},
			{qkv: true, dims: []dim{dEmbd, dEmbd, dVGQA, dVGQA}, only: onlyAttn},
			{name: "blk.%d.attn_output.weight", dims: []dim{dEmbd, dEmbd}, only: onlyAttn},
			ffnNormRule,
			{name: "blk.%d.ffn_gate_inp.weight", dims: []dim{dEmbd, dExperts}, optional: true},
		}, scoped(expertRules(false)[1:], onlyRouted), scoped(gatedFFNRules(false), onlyUnrouted)),
	}
}

// falconH1Hparams mirrors llama_model_falcon_h1::load_arch_hparams: every
// block is recurrent (a Mamba-2 mixer beside its attention). Falcon-H1's
// multipliers are folded into the weights by the converter; the graph has
// none.
func falconH1Hparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if err := readHybridSSM(c, r, true, false); err != nil {
		return err
	}
	c.Recurrent = make([]bool, c.Layers)
	for il := range c.Recurrent {
		c.Recurrent[il] = true
	}
	return nil
}

func init() {
	archs["falcon-h1"] = &archInfo{
		norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, ropeFactors: factorsFreqs,
		sameHeadDims: true, recurrent: recMamba, parallelMixer: true,
		hparams: falconH1Hparams,
		tensors: concat(headRules(true, false), []rule{
			{name: "rope_freqs.weight", dims: []dim{dRot2}, optional: true},
			{qkv: true, dims: []dim{dEmbd, dQ, dKGQA, dVGQA}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}},
			attnNormRule,
			{name: "blk.%d.ffn_norm", dims: []dim{dEmbd}},
		}, mamba2Rules(always, true), gatedFFNRules(true)),
	}
}
