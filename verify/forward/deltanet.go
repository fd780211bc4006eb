package forward

import (
	"context"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// Qwen3-Next and Qwen3.5 (src/models/qwen3next.cpp, qwen35.cpp,
// qwen35moe.cpp, delta-net-base.cpp): hybrids of gated attention blocks
// (the Q projection gives each head's query and an output gate,
// sigmoid(gate) multiplies the attention output) and gated delta net
// blocks. A delta net block projects its input to Q, K and V (through a
// causal convolution and silu, the conv state), to z, and to β and α per
// value head; per head and token its state S (d_state × d_state) decays by
// exp(softplus(α + dt_bias)·A), is corrected towards v along k by β
// (S += k ⊗ β(v − Sᵀk)), and is read out along q; each head's output is
// RMS-normalised and gated by silu(z) before ssm_out. Q and K heads are
// L2-normalised and shared by the value heads in turn (head h reads key
// head h mod n_group, as ggml_gated_delta_net does). Every block's FFN
// reads post_attention_norm(x).

// deltaNetHparams reads the delta net's sizes and the recurrent blocks
// (load_arch_hparams of qwen3next, qwen35, qwen35moe), then the MTP blocks.
func deltaNetHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	// The delta net's conv channels and heads are laid out as Mamba-2's
	// (Q, K of n_group heads as B, C; V of dt_rank heads as x).
	g, err := readSSMSizes(r, true)
	if err != nil {
		return err
	}
	if g.dInner != g.dState*g.dtRank || g.dtRank%g.nGroup != 0 {
		// The delta net's GGML_ASSERTs: S_k == S_v, H_v % H_k == 0.
		return fmt.Errorf("%w: ssm.inner_size %d must be ssm.state_size %d × ssm.time_step_rank %d, a multiple of ssm.group_count %d",
			ErrMetadata, g.dInner, g.dState, g.dtRank, g.nGroup)
	}
	c.rssm = g
	if err := readRecurrentLayers(c, r); err != nil {
		return err
	}
	if c.Experts > 0 {
		if _, err := r.u32(r.key(gguf.SuffixExpertSharedFFLength), &c.FFShared, false); err != nil {
			return err
		}
		if c.FFShared < 0 || c.FFShared > maxDim {
			return fmt.Errorf("%w: shared expert width %d", ErrMetadata, c.FFShared)
		}
	}
	return readNextN(c, r)
}

// readRecurrentLayers reads attention.recurrent_layers (one bool per block,
// MTP blocks included), else marks every block but each
// full_attention_interval-th (default 4) recurrent.
func readRecurrentLayers(c *Config, r *kvReader) error {
	c.Recurrent = make([]bool, c.Layers)
	key := r.key("attention.recurrent_layers")
	if v, ok := r.md.KV(key); ok {
		xs, ok := v.Any().([]bool)
		if !ok {
			return fmt.Errorf("%w: %s is not a bool array", ErrMetadata, key)
		}
		if len(xs) != c.Layers {
			return fmt.Errorf("%w: key %s has wrong array length; expected %d, got %d", ErrMetadata, key, c.Layers, len(xs))
		}
		copy(c.Recurrent, xs)
		return nil
	}
	interval := 4
	if _, err := r.u32(r.key("full_attention_interval"), &interval, false); err != nil {
		return err
	}
	if interval <= 0 {
		return fmt.Errorf("%w: %s = 0", ErrMetadata, r.key("full_attention_interval"))
	}
	var nextn int
	if _, err := r.u32(r.key("nextn_predict_layers"), &nextn, false); err != nil {
		return err
	}
	for il := range c.Recurrent {
		c.Recurrent[il] = il < c.Layers-nextn && (il+1)%interval != 0
	}
	return nil
}

// deltaNet is a gated delta net block on h (already normalised).
func (s *Session) deltaNet(ctx context.Context, il int, l *layer, h [][]float32) ([][]float32, error) {
	c, g, ly := s.m.cfg, s.m.cfg.rssm, l.rec
	T := len(h)
	nv, nk, ds := g.dtRank, g.nGroup, g.dState
	keyDim := nk * ds
	qkv, z := rows(T, 2*keyDim+g.dInner), rows(T, g.dInner)
	beta, alpha := rows(T, nv), rows(T, nv)
	for _, p := range []struct {
		w   *matrix
		out [][]float32
	}{{ly.in, qkv}, {ly.gateZ, z}, {ly.beta, beta}, {ly.alpha, alpha}} {
		if p.w == nil {
			continue
		}
		if err := s.mul(ctx, p.w, nil, h, p.out); err != nil {
			return nil, err
		}
	}
	if ly.ba != nil {
		// qwen3next: per key head, its value heads' β then their α.
		ba := rows(T, 2*nv)
		if err := s.mul(ctx, ly.ba, nil, h, ba); err != nil {
			return nil, err
		}
		per := nv / nk
		for t := range ba {
			for kh := range nk {
				copy(beta[t][kh*per:(kh+1)*per], ba[t][2*kh*per:])
				copy(alpha[t][kh*per:(kh+1)*per], ba[t][(2*kh+1)*per:])
			}
		}
	}
	causalConv(s.recr.conv[il], ly.conv, g.dConv, qkv)
	scale := float32(1 / math.Sqrt(float64(ds)))
	y := rows(T, g.dInner)
	delta, decay := make([]float32, ds), make([]float32, 1)
	state := s.recr.scan[il] // [nv][ds (v)][ds (k)]
	for t := range qkv {
		for i, v := range qkv[t] {
			qkv[t][i] = silu(v)
		}
		q, k, v := qkv[t][:keyDim], qkv[t][keyDim:2*keyDim], qkv[t][2*keyDim:]
		for off := 0; off < keyDim; off += ds {
			l2Norm(q[off:off+ds], c.NormEps)
			l2Norm(k[off:off+ds], c.NormEps)
		}
		for hv := range nv {
			decay[0] = float32(math.Exp(float64(softplus(alpha[t][hv]+ly.dtB[hv]) * ly.a[hv])))
			kh := hv % nk
			out := y[t][hv*ds : (hv+1)*ds]
			deltaRule(state[hv*ds*ds:(hv+1)*ds*ds], q[kh*ds:(kh+1)*ds], k[kh*ds:(kh+1)*ds], v[hv*ds:(hv+1)*ds],
				decay, sigmoid(beta[t][hv]), scale, delta, out)
			rmsNorm(out, out, ly.ssmNorm, c.NormEps)
			for j := range out {
				out[j] *= silu(z[t][hv*ds+j])
			}
		}
	}
	out := rows(T, c.Embd)
	if err := s.mul(ctx, ly.out, nil, y, out); err != nil {
		return nil, err
	}
	return out, nil
}

// deltaRule is ggml_gated_delta_net on one value head and token: the
// state m ([d (v)][d (k)]) decays by decay (one factor, or with Kimi's
// per-channel gate one per key dimension), is corrected towards v along k
// by β (m += (β(v − m·k)) ⊗ k), and is read out along q, scaled, into out.
// delta is d values of scratch.
func deltaRule(m, q, k, v, decay []float32, beta, scale float32, delta, out []float32) {
	d := len(k)
	for j := range d {
		row := m[j*d : (j+1)*d]
		if len(decay) == 1 {
			for i := range row {
				row[i] *= decay[0]
			}
		} else {
			for i := range row {
				row[i] *= decay[i]
			}
		}
	}
	for j := range d {
		delta[j] = (v[j] - dot(m[j*d:(j+1)*d], k)) * beta
	}
	for j := range d {
		row := m[j*d : (j+1)*d]
		for i := range row {
			row[i] += k[i] * delta[j]
		}
	}
	for j := range d {
		out[j] = dot(m[j*d:(j+1)*d], q) * scale
	}
}

// l2Norm is build_gdn_l2_norm in place: ggml_rms_norm with eps/n, scaled
// by 1/sqrt(n) (x / sqrt(Σx² + eps)).
func l2Norm(x []float32, eps float32) {
	n := float32(len(x))
	rmsNormPlain(x, x, eps/n)
	sc := 1 / float32(math.Sqrt(float64(n)))
	for i := range x {
		x[i] *= sc
	}
}

// deltaNetRules are the tensors of qwen3next (ba: a joint β/α projection),
// qwen35 and qwen35moe (experts with a gated shared expert).
func deltaNetRules(ba, experts bool) []rule {
	rs := concat(headRules(true, false), []rule{
		attnNormRule,
		{name: "blk.%d.post_attention_norm.weight", dims: []dim{dEmbd}},
		{qkv: true, dims: []dim{dEmbd, dQ2, dKGQA, dVGQA}, only: onlyAttn},
		{name: "blk.%d.attn_output.weight", dims: []dim{dQ, dEmbd}, only: onlyAttn},
		{name: "blk.%d.attn_q_norm.weight", dims: []dim{dHeadK}, only: onlyAttn},
		{name: "blk.%d.attn_k_norm.weight", dims: []dim{dHeadK}, only: onlyAttn},
		{name: "blk.%d.attn_qkv.weight", dims: []dim{dEmbd, dRecConv}, only: onlyRecurrent},
		{name: "blk.%d.attn_gate.weight", dims: []dim{dEmbd, dRecInner}, only: onlyRecurrent},
		{name: "blk.%d.ssm_conv1d.weight", dims: []dim{dRecConvK, dRecConv}, only: onlyRecurrent},
		{name: "blk.%d.ssm_dt.bias", dims: []dim{dRecHeads}, only: onlyRecurrent},
		{name: "blk.%d.ssm_a", dims: []dim{dRecHeads}, only: onlyRecurrent},
		{name: "blk.%d.ssm_norm.weight", dims: []dim{dRecState}, only: onlyRecurrent},
		{name: "blk.%d.ssm_out.weight", dims: []dim{dRecInner, dEmbd}, only: onlyRecurrent},
	})
	if ba {
		rs = append(rs, rule{name: "blk.%d.ssm_ba.weight", dims: []dim{dEmbd, dRecHeads2}, only: onlyRecurrent})
	} else {
		rs = append(rs,
			rule{name: "blk.%d.ssm_beta.weight", dims: []dim{dEmbd, dRecHeads}, only: onlyRecurrent},
			rule{name: "blk.%d.ssm_alpha.weight", dims: []dim{dEmbd, dRecHeads}, only: onlyRecurrent})
	}
	if experts {
		return append(rs, expertRules(true)...)
	}
	return append(rs, gatedFFNRules(false)...)
}

func init() {
	for _, a := range []struct {
		name        string
		ba, experts bool
		hparams     func(*Config, *kvReader) error
	}{
		{"qwen3next", true, true, deltaNetHparams},
		{"qwen35", false, false, mropeHparams(deltaNetHparams)},
		{"qwen35moe", false, true, mropeHparams(deltaNetHparams)},
	} {
		info := &archInfo{
			norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, qkNorm: true, gatedQ: true, ffnNormPostAttn: true,
			recurrent:    recDeltaNet,
			sameHeadDims: true,
			hparams:      a.hparams,
			tensors:      deltaNetRules(a.ba, a.experts),
		}
		if a.experts {
			info.moe = moeInfo{kind: moeNormed, required: true}
		}
		archs[a.name] = info
	}
}

// splitQueryGate splits rows of heads × [query | gate] (each d wide) into
// the queries and the gates.
func splitQueryGate(qg [][]float32, heads, d int) (q, gate [][]float32) {
	q, gate = rows(len(qg), heads*d), rows(len(qg), heads*d)
	for t, r := range qg {
		for h := range heads {
			copy(q[t][h*d:(h+1)*d], r[2*h*d:])
			copy(gate[t][h*d:(h+1)*d], r[(2*h+1)*d:])
		}
	}
	return q, gate
}
