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

// rwkv6Tensors is load_arch_tensors of rwkv6.
func (c *Config) rwkv6Tensors() []TensorSpec {
	rc := c.rwkv
	e, v, ff := int64(c.Embd), int64(c.Vocab), int64(c.FF)
	tm, td := int64(rc.mixExtra), int64(rc.decayExtra)
	out := []TensorSpec{
		{Name: "token_embd.weight", Shape: []int64{e, v}},
		{Name: "token_embd_norm.weight", Shape: []int64{e}},
		{Name: "token_embd_norm.bias", Shape: []int64{e}},
		{Name: "output_norm.weight", Shape: []int64{e}},
		{Name: "output_norm.bias", Shape: []int64{e}},
		{Name: "output.weight", Shape: []int64{e, v}},
	}
	for il := range c.Layers {
		b := func(n string, optional bool, shape ...int64) {
			out = append(out, TensorSpec{Name: fmt.Sprintf("blk.%d.%s", il, n), Shape: shape, Optional: optional})
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
	w1, dw1, dw2                           *matrix
	w2                                     []*matrix // per lerp: [embd] × [time_mix_extra_dim]
	key, value, recept, gate, out          *matrix
	cmKey, cmVal, cmRecept                 *matrix
}

// loadRWKV6 reads an RWKV-6 model's tensors (shapes checked by l).
func loadRWKV6(cfg *Config, w Weights, threads int) (*Model, error) {
	l := &loader{w: w, specs: map[string]TensorSpec{}}
	for _, s := range cfg.rwkv6Tensors() {
		l.specs[s.Name] = s
	}
	m := &Model{cfg: cfg, threads: threads}
	var err error
	if m.tokEmbd, err = l.tensor("token_embd.weight"); err != nil {
		return nil, err
	}
	vecs := []struct {
		dst  *[]float32
		name string
	}{{&m.tokNorm, "token_embd_norm.weight"}, {&m.tokNormB, "token_embd_norm.bias"}, {&m.outNorm, "output_norm.weight"},
		{&m.outNormB, "output_norm.bias"}}
	mats := []struct {
		dst  **matrix
		name string
	}{{&m.output, "output.weight"}}
	m.rwkv6 = make([]rwkv6Layer, cfg.Layers)
	for il := range m.rwkv6 {
		ly := &m.rwkv6[il]
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", il, s) }
		vecs = append(vecs, []struct {
			dst  *[]float32
			name string
		}{{&ly.attnNorm, b("attn_norm.weight")}, {&ly.attnNormB, b("attn_norm.bias")},
			{&ly.ffnNorm, b("attn_norm_2.weight")}, {&ly.ffnNormB, b("attn_norm_2.bias")},
			{&ly.lerpX, b("time_mix_lerp_x.weight")}, {&ly.lerp, b("time_mix_lerp_fused.weight")},
			{&ly.first, b("time_mix_first.weight")}, {&ly.decay, b("time_mix_decay.weight")},
			{&ly.lnX, b("time_mix_ln.weight")}, {&ly.lnXB, b("time_mix_ln.bias")},
			{&ly.cmLerpK, b("channel_mix_lerp_k.weight")}, {&ly.cmLerpR, b("channel_mix_lerp_r.weight")}}...)
		mats = append(mats, []struct {
			dst  **matrix
			name string
		}{{&ly.w1, b("time_mix_w1.weight")}, {&ly.dw1, b("time_mix_decay_w1.weight")}, {&ly.dw2, b("time_mix_decay_w2.weight")},
			{&ly.key, b("time_mix_key.weight")}, {&ly.value, b("time_mix_value.weight")},
			{&ly.recept, b("time_mix_receptance.weight")}, {&ly.gate, b("time_mix_gate.weight")},
			{&ly.out, b("time_mix_output.weight")}, {&ly.cmKey, b("channel_mix_key.weight")},
			{&ly.cmVal, b("channel_mix_value.weight")}, {&ly.cmRecept, b("channel_mix_receptance.weight")}}...)
		if ly.w2, err = l.experts(b("time_mix_w2.weight")); err != nil {
			return nil, err
		}
	}
	for _, v := range vecs {
		if *v.dst, err = l.vec(v.name); err != nil {
			return nil, err
		}
	}
	for _, v := range mats {
		if *v.dst, err = l.mat(v.name); err != nil {
			return nil, err
		}
	}
	for il, ly := range m.rwkv6 {
		if ly.lerp == nil {
			// llama.cpp also runs the five separate lerps of older files.
			return nil, fmt.Errorf("%w: blk.%d has no time_mix_lerp_fused (separate lerps are not supported)", ErrUnsupported, il)
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
		layerNorm(att[t], x[t], ly.attnNorm, ly.attnNormB, c.NormEps)
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
	r, k, v, g := rows(n, e), rows(n, e), rows(n, e), rows(n, e)
	for _, p := range []struct {
		w       *matrix
		in, dst [][]float32
	}{{ly.recept, mix[3], r}, {ly.key, mix[1], k}, {ly.value, mix[2], v}, {ly.gate, mix[4], g}} {
		if err := s.mul(ctx, p.w, nil, p.in, p.dst); err != nil {
			return err
		}
	}
	tanh := func(v float32) float32 { return float32(math.Tanh(float64(v))) }
	w, err := s.lora(ctx, ly.dw1, ly.dw2, tanh, mix[0])
	if err != nil {
		return err
	}
	for t := range w {
		for i := range w[t] {
			w[t][i] = float32(math.Exp(-float64(float32(math.Exp(float64(w[t][i] + ly.decay[i]))))))
			g[t][i] = silu(g[t][i])
		}
	}
	y := rows(n, e)
	state := s.rwkv.wkv[il] // [head][key i][value j]
	for t := range y {
		for h := 0; h < e; h += hs {
			st := state[h*hs : (h+hs)*hs]
			for i := range hs {
				row := st[i*hs : (i+1)*hs]
				ki, ri, ui, wi := k[t][h+i], r[t][h+i], ly.first[h+i], w[t][h+i]
				for j := range hs {
					kv := v[t][h+j] * ki
					y[t][h+j] += (kv*ui + row[j]) * ri
					row[j] = row[j]*wi + kv
				}
			}
			yh := y[t][h : h+hs]
			layerNorm(yh, yh, nil, nil, 64e-5) // the group norm, one group per head
			for i := h; i < h+hs; i++ {
				y[t][i] = (y[t][i]*ly.lnX[i] + ly.lnXB[i]) * g[t][i]
			}
		}
	}
	out := rows(n, e)
	if err := s.mul(ctx, ly.out, nil, y, out); err != nil {
		return err
	}
	ffn := rows(n, e)
	for t := range x {
		for i := range x[t] {
			x[t][i] += out[t][i]
		}
		layerNorm(ffn[t], x[t], ly.ffnNorm, ly.ffnNormB, c.NormEps)
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
