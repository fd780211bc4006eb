package forward

import (
	"context"
	"fmt"
	"math"
)

// RWKV-6 (src/models/rwkv6.cpp, rwkv6-base.cpp, ggml's rwkv_wkv6): the
// blocks of rwkv7.go's layout with RWKV-6's time mix — five data-dependent
// lerps (w, k, v, r, g) from one tanh LoRA, decay w = exp(−exp(decay +
// W2·tanh(W1·x))), the WKV-6 state (y = r·(u·kᵀv + S), S = diag(w)·S +
// kᵀv, u the per-head time_first bonus), the group norm and a silu gate —
// and a channel mix with a sigmoid receptance; every rescale_every_n_layers
// blocks the residual stream is halved.

// rwkv6Tensors is load_arch_tensors of rwkv6 and rwkv6qwen2.
func (c *Config) rwkv6Tensors() []TensorSpec {
	rc := c.rwkv
	e, v, ff := int64(c.Embd), int64(c.Vocab), int64(c.FF)
	tm, td := int64(rc.mixExtra), int64(rc.decayExtra)
	kvSize := e
	if q := rc.qwen2; q && c.HeadsKV != 0 && c.Embd/rc.headSize != c.HeadsKV {
		kvSize = int64(c.HeadsKV * rc.headSize)
	}
	out := []TensorSpec{{Name: "token_embd.weight", Shape: []int64{e, v}}}
	if !rc.qwen2 {
		out = append(out, TensorSpec{Name: "token_embd_norm.weight", Shape: []int64{e}}, TensorSpec{Name: "token_embd_norm.bias", Shape: []int64{e}})
	}
	out = append(out, TensorSpec{Name: "output_norm.weight", Shape: []int64{e}},
		TensorSpec{Name: "output_norm.bias", Shape: []int64{e}, Optional: rc.qwen2},
		TensorSpec{Name: "output.weight", Shape: []int64{e, v}})
	for il := range c.Layers {
		b := func(n string, optional bool, shape ...int64) {
			out = append(out, TensorSpec{Name: fmt.Sprintf("blk.%d.%s", il, n), Shape: shape, Optional: optional})
		}
		if rc.qwen2 {
			b("attn_norm.weight", false, e)
			b("time_mix_w1.weight", false, e, tm*5)
			b("time_mix_w2.weight", false, tm, e, 5)
			b("time_mix_lerp_x.weight", false, e, 1, 1)
			b("time_mix_lerp_fused.weight", false, e, 1, 1, 5)
			b("time_mix_first.weight", true, int64(rc.headSize), e/int64(rc.headSize))
			b("time_mix_decay.weight", false, e)
			b("time_mix_decay_w1.weight", false, e, td)
			b("time_mix_decay_w2.weight", false, td, e)
			b("time_mix_key.weight", false, e, kvSize)
			b("time_mix_value.weight", false, e, kvSize)
			b("time_mix_receptance.weight", false, e, e)
			b("time_mix_gate.weight", false, e, e)
			b("time_mix_key.bias", true, kvSize)
			b("time_mix_value.bias", true, kvSize)
			b("time_mix_receptance.bias", true, e)
			b("time_mix_output.weight", false, e, e)
			b("ffn_norm.weight", false, e)
			b("ffn_gate.weight", false, e, ff)
			b("ffn_down.weight", false, ff, e)
			b("ffn_up.weight", false, e, ff)
			continue
		}
		b("attn_norm.weight", false, e)
		b("attn_norm.bias", false, e)
		b("attn_norm_2.weight", false, e)
		b("attn_norm_2.bias", false, e)
		b("time_mix_w1.weight", false, e, tm*5)
		b("time_mix_w2.weight", false, tm, e, 5)
		b("time_mix_lerp_x.weight", false, e, 1, 1)
		for _, x := range []string{"w", "k", "v", "r", "g"} {
			b("time_mix_lerp_"+x+".weight", true, e, 1, 1)
		}
		b("time_mix_lerp_fused.weight", true, e, 1, 1, 5)
		b("time_mix_first.weight", false, int64(rc.headSize), e/int64(rc.headSize))
		b("time_mix_decay.weight", false, e)
		b("time_mix_decay_w1.weight", false, e, td)
		b("time_mix_decay_w2.weight", false, td, e)
		b("time_mix_key.weight", false, e, e)
		b("time_mix_value.weight", false, e, e)
		b("time_mix_receptance.weight", false, e, e)
		b("time_mix_gate.weight", false, e, e)
		b("time_mix_ln.weight", false, e)
		b("time_mix_ln.bias", false, e)
		b("time_mix_output.weight", false, e, e)
		b("channel_mix_lerp_k.weight", false, e, 1, 1)
		b("channel_mix_lerp_r.weight", false, e, 1, 1)
		b("channel_mix_key.weight", false, e, ff)
		b("channel_mix_value.weight", false, ff, e)
		b("channel_mix_receptance.weight", false, e, e)
	}
	return out
}

// rwkv6Layer holds one RWKV-6 block's weights.
type rwkv6Layer struct {
	attnNorm, attnNormB, ffnNorm, ffnNormB []float32
	lerpX, lerp, first, decay, lnX, lnXB   []float32 // lerp: [5][embd] (w, k, v, r, g)
	cmLerpK, cmLerpR                       []float32
	bR, bK, bV                             []float32 // rwkv6qwen2's optional biases
	ffnGate, ffnUp, ffnDown                *matrix   // rwkv6qwen2's SwiGLU
	w1, dw1, dw2                           *matrix
	w2                                     []*matrix // per lerp: [embd] × [time_mix_extra_dim]
	key, value, recept, gate, out          *matrix
	cmKey, cmVal, cmRecept                 *matrix
}

// loadRWKV6 reads an RWKV-6 or QRWKV-6 model's tensors (shapes checked by
// the loader).
func loadRWKV6(cfg *Config, w Weights, threads int) (*Model, error) {
	m := &Model{rwkv6: make([]rwkv6Layer, cfg.Layers)}
	specs := cfg.rwkv6Tensors()
	l := newSpecLoader(w, specs)
	var vecs []vecRef
	var mats []matRef
	for il := range m.rwkv6 {
		ly := &m.rwkv6[il]
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", il, s) }
		ffnNorm := b("attn_norm_2.weight")
		if cfg.rwkv.qwen2 {
			ffnNorm = b("ffn_norm.weight")
		}
		vecs = append(vecs, []vecRef{{&ly.attnNorm, b("attn_norm.weight")}, {&ly.attnNormB, b("attn_norm.bias")},
			{&ly.ffnNorm, ffnNorm}, {&ly.ffnNormB, b("attn_norm_2.bias")},
			{&ly.lerpX, b("time_mix_lerp_x.weight")}, {&ly.lerp, b("time_mix_lerp_fused.weight")},
			{&ly.first, b("time_mix_first.weight")}, {&ly.decay, b("time_mix_decay.weight")},
			{&ly.lnX, b("time_mix_ln.weight")}, {&ly.lnXB, b("time_mix_ln.bias")},
			{&ly.cmLerpK, b("channel_mix_lerp_k.weight")}, {&ly.cmLerpR, b("channel_mix_lerp_r.weight")},
			{&ly.bR, b("time_mix_receptance.bias")}, {&ly.bK, b("time_mix_key.bias")}, {&ly.bV, b("time_mix_value.bias")}}...)
		mats = append(mats, []matRef{{&ly.w1, b("time_mix_w1.weight")}, {&ly.dw1, b("time_mix_decay_w1.weight")},
			{&ly.dw2, b("time_mix_decay_w2.weight")}, {&ly.key, b("time_mix_key.weight")},
			{&ly.value, b("time_mix_value.weight")}, {&ly.recept, b("time_mix_receptance.weight")},
			{&ly.gate, b("time_mix_gate.weight")}, {&ly.out, b("time_mix_output.weight")},
			{&ly.cmKey, b("channel_mix_key.weight")}, {&ly.cmVal, b("channel_mix_value.weight")},
			{&ly.cmRecept, b("channel_mix_receptance.weight")}, {&ly.ffnGate, b("ffn_gate.weight")},
			{&ly.ffnUp, b("ffn_up.weight")}, {&ly.ffnDown, b("ffn_down.weight")}}...)
		var err error
		if ly.w2, err = l.experts(b("time_mix_w2.weight")); err != nil {
			return nil, err
		}
	}
	if _, err := loadRWKVModel(cfg, w, threads, specs, m, vecs, mats); err != nil {
		return nil, err
	}
	if m.outNormB != nil && cfg.rwkv.qwen2 {
		return nil, fmt.Errorf("%w: output_norm.bias after an RMS norm", ErrUnsupported)
	}
	for il, ly := range m.rwkv6 {
		switch {
		case ly.lerp == nil:
			// llama.cpp also runs the five separate lerps of older files.
			return nil, fmt.Errorf("%w: blk.%d has no time_mix_lerp_fused (separate lerps are not supported)", ErrUnsupported, il)
		case cfg.rwkv.qwen2 && ly.first != nil:
			// llama.cpp then runs WKV-6 with the bonus on QRWKV-6's blocks.
			return nil, fmt.Errorf("%w: blk.%d.time_mix_first in rwkv6qwen2", ErrUnsupported, il)
		}
	}
	return m, nil
}

// rwkv6Block is one block: x += time_mix(ln1(x)); x += channel_mix(ln2(x));
// x halved after every rescale_every_n_layers-th block.
func (s *Session) rwkv6Block(ctx context.Context, il int, x [][]float32) error {
	c, rc := s.m.cfg, s.m.cfg.rwkv
	hs := rc.headSize
	ly := &s.m.rwkv6[il]
	n, e := len(x), c.Embd
	shift := s.rwkv.shift[il]
	att := rows(n, e)
	for t := range x {
		s.norm(att[t], x[t], ly.attnNorm, ly.attnNormB)
	}
	// sx = x_prev − x and xxx = sx·lerp_x + x, then the five LoRA outputs.
	sx, xxx := rows(n, e), [][][]float32{rows(n, e)}
	prev := shift[:e]
	for t := range att {
		for i, v := range att[t] {
			sx[t][i] = prev[i] - v
		}
		prev = att[t]
	}
	copy(shift[:e], att[n-1])
	for t := range att {
		for i, v := range att[t] {
			xxx[0][t][i] = sx[t][i]*ly.lerpX[i] + v
		}
	}
	low := rows(n, ly.w1.rows)
	if err := s.mul(ctx, ly.w1, nil, xxx[0], low); err != nil {
		return err
	}
	tm := rc.mixExtra
	mix := make([][][]float32, 5) // w, k, v, r, g
	for j := range mix {
		part := make([][]float32, n)
		for t := range low {
			for i := j * tm; i < (j+1)*tm; i++ {
				low[t][i] = float32(math.Tanh(float64(low[t][i])))
			}
			part[t] = low[t][j*tm : (j+1)*tm]
		}
		mix[j] = rows(n, e)
		if err := s.mul(ctx, ly.w2[j], nil, part, mix[j]); err != nil {
			return err
		}
		for t := range mix[j] {
			for i := range mix[j][t] {
				mix[j][t][i] = (mix[j][t][i]+ly.lerp[j*e+i])*sx[t][i] + att[t][i]
			}
		}
	}
	r, g := rows(n, e), rows(n, e)
	k, v := rows(n, ly.key.rows), rows(n, ly.value.rows)
	for _, p := range []struct {
		w       *matrix
		b       []float32
		in, dst [][]float32
	}{{ly.recept, ly.bR, mix[3], r}, {ly.key, ly.bK, mix[1], k}, {ly.value, ly.bV, mix[2], v}, {ly.gate, nil, mix[4], g}} {
		if err := s.mul(ctx, p.w, p.b, p.in, p.dst); err != nil {
			return err
		}
	}
	if kvw := ly.key.rows; kvw != e {
		// Grouped keys and values (rwkv6qwen2): head h reads group h / (heads / groups).
		k, v = repeatHeads(k, e, kvw, hs), repeatHeads(v, e, kvw, hs)
	}
	tanh := func(v float32) float32 { return float32(math.Tanh(float64(v))) }
	w, err := s.lora(ctx, ly.dw1, ly.dw2, tanh, mix[0])
	if err != nil {
		return err
	}
	for t := range w {
		for i := range w[t] {
			w[t][i] = float32(math.Exp(-float64(float32(math.Exp(float64(w[t][i] + ly.decay[i]))))))
			if rc.qwen2 {
				g[t][i] = sigmoid(g[t][i])
				k[t][i] -= k[t][i] * w[t][i]
			} else {
				g[t][i] = silu(g[t][i])
			}
		}
	}
	y := rows(n, e)
	s.wkv6(il, ly, r, w, k, v, y)
	for t := range y {
		for h := 0; h < e; h += hs {
			if !rc.qwen2 {
				yh := y[t][h : h+hs]
				layerNorm(yh, yh, nil, nil, 64e-5) // the group norm, one group per head
				for i := h; i < h+hs; i++ {
					y[t][i] = y[t][i]*ly.lnX[i] + ly.lnXB[i]
				}
			}
			for i := h; i < h+hs; i++ {
				y[t][i] *= g[t][i]
			}
		}
	}
	out := rows(n, e)
	if err := s.mul(ctx, ly.out, nil, y, out); err != nil {
		return err
	}
	if rc.qwen2 {
		for t := range x {
			for i := range x[t] {
				x[t][i] += out[t][i]
			}
		}
		// The feed-forward: x += down(silu(gate·h) · up·h), h = rms_norm(x).
		h := rows(n, e)
		for t := range x {
			s.norm(h[t], x[t], ly.ffnNorm, nil)
		}
		if err := s.swiglu(ctx, ly.ffnGate, ly.ffnUp, ly.ffnDown, h, out); err != nil {
			return err
		}
		for t := range x {
			for i := range x[t] {
				x[t][i] += out[t][i]
			}
		}
		return nil
	}
	ffn := rows(n, e)
	for t := range x {
		for i := range x[t] {
			x[t][i] += out[t][i]
		}
		s.norm(ffn[t], x[t], ly.ffnNorm, ly.ffnNormB)
	}
	xkr := [][][]float32{rows(n, e), rows(n, e)}
	lerps := make([]float32, 2*e)
	copy(lerps, ly.cmLerpK)
	copy(lerps[e:], ly.cmLerpR)
	tokenShift(ffn, shift[e:], lerps, xkr)
	kf := rows(n, ly.cmKey.rows)
	if err := s.mul(ctx, ly.cmKey, nil, xkr[0], kf); err != nil {
		return err
	}
	for _, row := range kf {
		for i, q := range row {
			q = max(q, 0)
			row[i] = q * q
		}
	}
	rr := rows(n, e)
	if err := s.mul(ctx, ly.cmRecept, nil, xkr[1], rr); err != nil {
		return err
	}
	if err := s.mul(ctx, ly.cmVal, nil, kf, out); err != nil {
		return err
	}
	halve := rc.rescale != 0 && (il+1)%rc.rescale == 0
	for t := range x {
		for i := range x[t] {
			x[t][i] += sigmoid(rr[t][i]) * out[t][i]
			if halve {
				x[t][i] *= 0.5
			}
		}
	}
	return nil
}

// wkv6 is ggml_rwkv_wkv6 (rwkv6: per token and head, for key i and value
// j, y_j += r_i·(u_i·k_i·v_j + S[i][j]) and S[i][j] = S[i][j]·w_i + k_i·v_j)
// or, without time_first (rwkv6qwen2), ggml_gated_linear_attn with scale
// head_size^−½: S[i][j] = S[i][j]·w_i + k_i·v_j, y_j += r_i·scale·S[i][j].
func (s *Session) wkv6(il int, ly *rwkv6Layer, r, w, k, v, y [][]float32) {
	hs, e := s.m.cfg.rwkv.headSize, s.m.cfg.Embd
	scale := float32(math.Pow(float64(hs), -0.5))
	state := s.rwkv.wkv[il] // [head][key i][value j]
	for t := range y {
		for h := 0; h < e; h += hs {
			st := state[h*hs : (h+hs)*hs]
			for i := range hs {
				row := st[i*hs : (i+1)*hs]
				ki, ri, wi := k[t][h+i], r[t][h+i], w[t][h+i]
				if ly.first == nil {
					qi := ri * scale
					for j := range hs {
						row[j] = row[j]*wi + v[t][h+j]*ki
						y[t][h+j] += row[j] * qi
					}
					continue
				}
				ui := ly.first[h+i]
				for j := range hs {
					kv := v[t][h+j] * ki
					y[t][h+j] += (kv*ui + row[j]) * ri
					row[j] = row[j]*wi + kv
				}
			}
		}
	}
}

// repeatHeads widens rows of kvw values (groups of hs) to e, head h taking
// group h / (e / kvw).
func repeatHeads(x [][]float32, e, kvw, hs int) [][]float32 {
	out := rows(len(x), e)
	rep := e / kvw
	for t := range x {
		for h := 0; h < e/hs; h++ {
			g := h / rep
			copy(out[t][h*hs:(h+1)*hs], x[t][g*hs:(g+1)*hs])
		}
	}
	return out
}
