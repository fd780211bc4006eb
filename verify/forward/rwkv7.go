package forward

import (
	"context"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// RWKV-7 (src/models/rwkv7.cpp, rwkv7-base.cpp, ggml's rwkv_wkv7): the
// token embedding is layer-normalised (token_embd_norm), then each block
// mixes every token with the previous one (token shift) and runs the time
// mix — receptance r, decay w = exp(−0.606531·σ(w0 + W2·tanh(W1·x))), key
// k, value v (mixed from block 0's value through σ(v0 + V2·V1·x) after
// block 0), in-context learning rate a = σ(a0 + A2·A1·x), gate
// g = G2·σ(G1·x) — through the WKV-7 state of head_size × head_size per
// head (S = S·diag(w) + v·kᵀ + (S·(−k̂))·(k̂·a)ᵀ, out = S·r, k̂ the per-head
// L2-normalised k·k_k), a per-head group norm, the r·k·r_k bonus and the
// gate; then the channel mix relu(K·x)² → V. The recurrent state (the two
// token shifts and the WKV state) replaces the attention cache, rebuilt
// from the kept tokens after a Truncate as for Mamba.
//
// ARWKV-7 (src/models/arwkv7.cpp) runs the same time mix in a Qwen2 body:
// RMS norms, no token-embedding norm, one token shift, the gate (g1/g2, a
// sixth lerp) and the group norm (time_mix_ln) optional, and a SwiGLU
// feed-forward in place of the channel mix.

// rwkvConfig holds RWKV-6's and RWKV-7's sizes (llama_hparams'
// wkv_head_size, RWKV-7's LoRA ranks, RWKV-6's extra dims and rescaling).
type rwkvConfig struct {
	// v6 is set for rwkv6 and rwkv6qwen2, qwen2 for the Qwen2 bodies
	// rwkv6qwen2 (QRWKV-6: RMS norms, one token shift, grouped keys and
	// values, gated linear attention, a SwiGLU feed-forward) and arwkv7
	// (ARWKV-7: RWKV-7's time mix, RMS norms, one token shift, SwiGLU).
	v6, qwen2                      bool
	headSize                       int
	loraDecay, loraICLR, loraValue int
	loraGate                       int
	// mixExtra, decayExtra and rescale are RWKV-6's time_mix_extra_dim,
	// time_decay_extra_dim and rescale_every_n_layers.
	mixExtra, decayExtra, rescale int
}

// parseRWKV mirrors load_arch_hparams of llama_model_rwkv6,
// llama_model_rwkv6qwen2, llama_model_rwkv7 and llama_model_arwkv7 and the
// checks of their tensors and graphs.
func parseRWKV(r *kvReader) (*Config, error) {
	c := &Config{Arch: r.arch, arch: &archInfo{norm: normLayer}}
	for _, k := range []struct {
		suffix string
		dst    *int
	}{{gguf.SuffixContextLength, &c.CtxTrain}, {gguf.SuffixEmbeddingLength, &c.Embd}, {gguf.SuffixBlockCount, &c.Layers},
		{"feed_forward_length", &c.FF}} {
		if _, err := r.u32(r.key(k.suffix), k.dst, true); err != nil {
			return nil, err
		}
	}
	if c.Layers <= 0 || c.Layers > maxLayers {
		return nil, fmt.Errorf("%w: %s = %d (must be 1..%d)", ErrMetadata, r.key(gguf.SuffixBlockCount), c.Layers, maxLayers)
	}
	rc := &rwkvConfig{v6: r.arch == "rwkv6" || r.arch == "rwkv6qwen2", qwen2: r.arch == "rwkv6qwen2" || r.arch == "arwkv7"}
	epsKey := "attention.layer_norm_epsilon"
	if rc.qwen2 {
		c.arch.norm = normRMS
		epsKey = "attention.layer_norm_rms_epsilon"
	}
	if rc.qwen2 && rc.v6 {
		if _, err := r.u32(r.key("attention.head_count_kv"), &c.HeadsKV, false); err != nil {
			return nil, err
		}
	}
	if _, err := r.f32(r.key(epsKey), &c.NormEps, false); err != nil {
		return nil, err
	}
	keys := []struct {
		suffix   string
		dst      *int
		required bool
	}{{"wkv.head_size", &rc.headSize, true}, {"attention.decay_lora_rank", &rc.loraDecay, true},
		{"attention.iclr_lora_rank", &rc.loraICLR, true}, {"attention.value_residual_mix_lora_rank", &rc.loraValue, true},
		{"attention.gate_lora_rank", &rc.loraGate, false}}
	sizes := []struct {
		name string
		n    *int
	}{{"attention.decay_lora_rank", &rc.loraDecay}, {"attention.iclr_lora_rank", &rc.loraICLR},
		{"attention.value_residual_mix_lora_rank", &rc.loraValue}, {"attention.gate_lora_rank", &rc.loraGate}}
	if rc.v6 {
		keys = append(keys[:1], []struct {
			suffix   string
			dst      *int
			required bool
		}{{"time_mix_extra_dim", &rc.mixExtra, true}, {"time_decay_extra_dim", &rc.decayExtra, true},
			{"rescale_every_n_layers", &rc.rescale, false}}...)
		sizes = []struct {
			name string
			n    *int
		}{{"time_mix_extra_dim", &rc.mixExtra}, {"time_decay_extra_dim", &rc.decayExtra}}
	}
	for _, k := range keys {
		if _, err := r.u32(r.key(k.suffix), k.dst, k.required); err != nil {
			return nil, err
		}
	}
	shifts, wantShifts := 2, 2
	if rc.qwen2 {
		wantShifts = 1 // GGML_ASSERT(n_embd == hparams.n_embd_r())
	}
	if _, err := r.u32(r.key("token_shift_count"), &shifts, false); err != nil {
		return nil, err
	}
	if err := c.readVocab(r); err != nil {
		return nil, err
	}
	const maxDim = 1 << 20
	for _, v := range []struct {
		name string
		n    int
	}{{gguf.SuffixEmbeddingLength, c.Embd}, {"feed_forward_length", c.FF}, {"wkv.head_size", rc.headSize}} {
		if v.n <= 0 || v.n > maxDim {
			return nil, fmt.Errorf("%w: %s = %d (must be 1..%d)", ErrMetadata, r.key(v.name), v.n, maxDim)
		}
	}
	for _, v := range sizes {
		if v.name == "attention.gate_lora_rank" && rc.qwen2 && *v.n == 0 {
			continue // arwkv7 without a gate (no g1/g2)
		}
		if *v.n <= 0 || *v.n > maxDim {
			if v.name == "attention.gate_lora_rank" {
				return nil, fmt.Errorf("%w: %s = %d: RWKV-7 without a gate is not supported", ErrUnsupported, r.key(v.name), *v.n)
			}
			return nil, fmt.Errorf("%w: %s = %d (must be 1..%d)", ErrMetadata, r.key(v.name), *v.n, maxDim)
		}
	}
	switch {
	case c.Embd%rc.headSize != 0:
		return nil, fmt.Errorf("%w: %s = %d does not divide %s = %d", ErrMetadata, r.key("wkv.head_size"), rc.headSize,
			r.key(gguf.SuffixEmbeddingLength), c.Embd)
	case shifts != wantShifts:
		// The graph's GGML_ASSERT.
		return nil, fmt.Errorf("%w: %s = %d (the graph keeps %d token shifts)", ErrMetadata, r.key("token_shift_count"), shifts, wantShifts)
	case rc.qwen2 && c.HeadsKV != 0 && (c.HeadsKV > c.Embd/rc.headSize || (c.Embd/rc.headSize)%c.HeadsKV != 0):
		return nil, fmt.Errorf("%w: %s = %d does not divide the %d heads", ErrMetadata, r.key("attention.head_count_kv"), c.HeadsKV, c.Embd/rc.headSize)
	case rc.rescale < 0 || rc.rescale > maxLayers:
		return nil, fmt.Errorf("%w: %s = %d", ErrMetadata, r.key("rescale_every_n_layers"), rc.rescale)
	}
	c.rwkv = rc
	return c, nil
}

// rwkv7Tensors is load_arch_tensors of rwkv7, or of arwkv7 (rc.qwen2);
// present says which names the model has (arwkv7's lerps are six with the
// gate, five without).
func (c *Config) rwkv7Tensors(present func(string) bool) []TensorSpec {
	rc := c.rwkv
	if rc.qwen2 {
		return c.arwkv7Tensors(present)
	}
	e, v, ff := int64(c.Embd), int64(c.Vocab), int64(c.FF)
	rd, ri, rv, rg := int64(rc.loraDecay), int64(rc.loraICLR), int64(rc.loraValue), int64(rc.loraGate)
	out := []TensorSpec{
		{Name: "token_embd.weight", Shape: []int64{e, v}},
		{Name: "token_embd_norm.weight", Shape: []int64{e}},
		{Name: "token_embd_norm.bias", Shape: []int64{e}},
		{Name: "output_norm.weight", Shape: []int64{e}},
		{Name: "output_norm.bias", Shape: []int64{e}},
		{Name: "output.weight", Shape: []int64{e, v}},
	}
	for il := range c.Layers {
		b := func(n string, shape ...int64) {
			out = append(out, TensorSpec{Name: fmt.Sprintf("blk.%d.%s", il, n), Shape: shape})
		}
		b("attn_norm.weight", e)
		b("attn_norm.bias", e)
		b("attn_norm_2.weight", e)
		b("attn_norm_2.bias", e)
		b("time_mix_w0.weight", e)
		b("time_mix_w1.weight", e, rd)
		b("time_mix_w2.weight", rd, e)
		b("time_mix_a0.weight", e)
		b("time_mix_a1.weight", e, ri)
		b("time_mix_a2.weight", ri, e)
		if il == 0 {
			rv = ri // block 0's are unused, shaped as a1/a2
		} else {
			rv = int64(rc.loraValue)
		}
		b("time_mix_v0.weight", e)
		b("time_mix_v1.weight", e, rv)
		b("time_mix_v2.weight", rv, e)
		b("time_mix_g1.weight", e, rg)
		b("time_mix_g2.weight", rg, e)
		b("time_mix_lerp_fused.weight", e, 1, 1, 6)
		b("time_mix_k_k.weight", e)
		b("time_mix_k_a.weight", e)
		b("time_mix_r_k.weight", e)
		b("time_mix_key.weight", e, e)
		b("time_mix_value.weight", e, e)
		b("time_mix_receptance.weight", e, e)
		b("time_mix_ln.weight", e)
		b("time_mix_ln.bias", e)
		b("time_mix_output.weight", e, e)
		b("channel_mix_lerp_k.weight", e, 1, 1)
		b("channel_mix_key.weight", e, ff)
		b("channel_mix_value.weight", ff, e)
	}
	return out
}

// arwkv7Tensors is load_arch_tensors of arwkv7.
func (c *Config) arwkv7Tensors(present func(string) bool) []TensorSpec {
	rc := c.rwkv
	e, v, ff := int64(c.Embd), int64(c.Vocab), int64(c.FF)
	rd, ri, rv, rg := int64(rc.loraDecay), int64(rc.loraICLR), int64(rc.loraValue), int64(rc.loraGate)
	out := []TensorSpec{
		{Name: "token_embd.weight", Shape: []int64{e, v}},
		{Name: "output_norm.weight", Shape: []int64{e}},
		{Name: "output.weight", Shape: []int64{e, v}},
	}
	for il := range c.Layers {
		name := func(n string) string { return fmt.Sprintf("blk.%d.%s", il, n) }
		b := func(n string, optional bool, shape ...int64) {
			out = append(out, TensorSpec{Name: name(n), Shape: shape, Optional: optional})
		}
		b("attn_norm.weight", false, e)
		b("time_mix_w0.weight", false, e)
		b("time_mix_w1.weight", false, e, rd)
		b("time_mix_w2.weight", false, rd, e)
		b("time_mix_a0.weight", false, e)
		b("time_mix_a1.weight", false, e, ri)
		b("time_mix_a2.weight", false, ri, e)
		lv := rv
		if il == 0 {
			lv = ri // block 0's are unused, shaped as a1/a2
		}
		b("time_mix_v0.weight", false, e)
		b("time_mix_v1.weight", false, e, lv)
		b("time_mix_v2.weight", false, lv, e)
		b("time_mix_g1.weight", true, e, rg)
		b("time_mix_g2.weight", true, rg, e)
		// llama.cpp tries six lerps, then five ("ARWKV models may not have
		// gate tensors"); the graph reads the sixth when g1 and g2 exist.
		lerps := int64(5)
		if present(name("time_mix_g1.weight")) && present(name("time_mix_g2.weight")) {
			lerps = 6
		}
		b("time_mix_lerp_fused.weight", false, e, 1, 1, lerps)
		b("time_mix_k_k.weight", false, e)
		b("time_mix_k_a.weight", false, e)
		b("time_mix_r_k.weight", false, e)
		b("time_mix_key.weight", false, e, e)
		b("time_mix_value.weight", false, e, e)
		b("time_mix_receptance.weight", false, e, e)
		b("time_mix_ln.weight", true, e)
		b("time_mix_ln.bias", true, e)
		b("time_mix_output.weight", false, e, e)
		b("ffn_norm.weight", false, e)
		b("ffn_gate.weight", false, e, ff)
		b("ffn_down.weight", false, ff, e)
		b("ffn_up.weight", false, e, ff)
	}
	return out
}

// rwkv7Layer holds one RWKV-7 or ARWKV-7 block's weights.
type rwkv7Layer struct {
	attnNorm, attnNormB, ffnNorm, ffnNormB []float32
	w0, a0, v0, kK, kA, rK, lnX, lnXB      []float32 // lnX, lnXB: nil without the group norm (arwkv7)
	lerp, cmLerpK                          []float32 // [6][embd] ([5][embd] without the gate), [embd]
	w1, w2, a1, a2, v1, v2, g1, g2         *matrix   // g1, g2: nil without the gate (arwkv7)
	key, value, recept, out, cmKey, cmVal  *matrix
	ffnGate, ffnUp, ffnDown                *matrix // arwkv7's SwiGLU
}

// vecRef and matRef name a tensor to load into a vector or a matrix.
type (
	vecRef struct {
		dst  *[]float32
		name string
	}
	matRef struct {
		dst  **matrix
		name string
	}
)

// newSpecLoader is a loader of the tensors specs lists.
func newSpecLoader(w Weights, specs []TensorSpec) *loader {
	l := &loader{w: w, specs: make(map[string]TensorSpec, len(specs))}
	for _, s := range specs {
		l.specs[s.Name] = s
	}
	return l
}

// loadRWKVModel reads the token embedding and the vectors and matrices
// named, the ones common to RWKV-6 and RWKV-7 first.
func loadRWKVModel(cfg *Config, w Weights, threads int, specs []TensorSpec, m *Model, vecs []vecRef, mats []matRef) (*Model, error) {
	l := newSpecLoader(w, specs)
	m.cfg, m.threads = cfg, threads
	var err error
	if m.tokEmbd, err = l.tensor("token_embd.weight"); err != nil {
		return nil, err
	}
	vecs = append([]vecRef{{&m.tokNorm, "token_embd_norm.weight"}, {&m.tokNormB, "token_embd_norm.bias"},
		{&m.outNorm, "output_norm.weight"}, {&m.outNormB, "output_norm.bias"}}, vecs...)
	mats = append([]matRef{{&m.output, "output.weight"}}, mats...)
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
	return m, nil
}

// loadRWKV7 reads an RWKV-7 or ARWKV-7 model's tensors (shapes checked by
// the loader).
func loadRWKV7(cfg *Config, w Weights, threads int) (*Model, error) {
	m := &Model{rwkv: make([]rwkv7Layer, cfg.Layers)}
	var vecs []vecRef
	var mats []matRef
	for il := range m.rwkv {
		ly := &m.rwkv[il]
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", il, s) }
		ffnNorm := b("attn_norm_2.weight")
		if cfg.rwkv.qwen2 {
			ffnNorm = b("ffn_norm.weight")
		}
		vecs = append(vecs, []vecRef{{&ly.attnNorm, b("attn_norm.weight")}, {&ly.attnNormB, b("attn_norm.bias")},
			{&ly.ffnNorm, ffnNorm}, {&ly.ffnNormB, b("attn_norm_2.bias")},
			{&ly.w0, b("time_mix_w0.weight")}, {&ly.a0, b("time_mix_a0.weight")}, {&ly.v0, b("time_mix_v0.weight")},
			{&ly.kK, b("time_mix_k_k.weight")}, {&ly.kA, b("time_mix_k_a.weight")}, {&ly.rK, b("time_mix_r_k.weight")},
			{&ly.lnX, b("time_mix_ln.weight")}, {&ly.lnXB, b("time_mix_ln.bias")},
			{&ly.lerp, b("time_mix_lerp_fused.weight")}, {&ly.cmLerpK, b("channel_mix_lerp_k.weight")}}...)
		mats = append(mats, []matRef{{&ly.w1, b("time_mix_w1.weight")}, {&ly.w2, b("time_mix_w2.weight")},
			{&ly.a1, b("time_mix_a1.weight")}, {&ly.a2, b("time_mix_a2.weight")}, {&ly.v1, b("time_mix_v1.weight")},
			{&ly.v2, b("time_mix_v2.weight")}, {&ly.g1, b("time_mix_g1.weight")}, {&ly.g2, b("time_mix_g2.weight")},
			{&ly.key, b("time_mix_key.weight")}, {&ly.value, b("time_mix_value.weight")},
			{&ly.recept, b("time_mix_receptance.weight")}, {&ly.out, b("time_mix_output.weight")},
			{&ly.cmKey, b("channel_mix_key.weight")}, {&ly.cmVal, b("channel_mix_value.weight")},
			{&ly.ffnGate, b("ffn_gate.weight")}, {&ly.ffnUp, b("ffn_up.weight")}, {&ly.ffnDown, b("ffn_down.weight")}}...)
	}
	present := func(name string) bool { _, ok := w.Tensor(name); return ok }
	return loadRWKVModel(cfg, w, threads, cfg.rwkv7Tensors(present), m, vecs, mats)
}

// rwkvState is a session's recurrent state: per layer the two token
// shifts (the last time-mix and channel-mix inputs) and the WKV state,
// plus the tokens evaluated (to rebuild the state after a Truncate).
type rwkvState struct {
	shift, wkv [][]float32
	replayLog
}

func newRWKVState(c *Config) *rwkvState {
	st := &rwkvState{shift: make([][]float32, c.Layers), wkv: make([][]float32, c.Layers)}
	for il := range st.shift {
		st.shift[il] = make([]float32, 2*c.Embd)
		st.wkv[il] = make([]float32, c.Embd*c.rwkv.headSize)
	}
	return st
}

// evalRWKV runs the RWKV-6 or RWKV-7 blocks over x (the new tokens'
// embeddings) in place, after rebuilding a stale state from the kept tokens.
func (s *Session) evalRWKV(ctx context.Context, tokens []int, x [][]float32) error {
	st, m := s.rwkv, s.m
	reset := func() {
		for il := range st.shift {
			clear(st.shift[il])
			clear(st.wkv[il])
		}
	}
	if err := st.rebuild(ctx, s, reset, s.evalRWKV); err != nil {
		return err
	}
	for t := range x {
		if m.tokNorm != nil { // none in rwkv6qwen2
			layerNorm(x[t], x[t], m.tokNorm, m.tokNormB, m.cfg.NormEps)
		}
	}
	var vFirst [][]float32
	for il := range m.rwkv {
		var err error
		if vFirst, err = s.rwkv7Block(ctx, il, x, vFirst); err != nil {
			return err
		}
	}
	for il := range m.rwkv6 {
		if err := s.rwkv6Block(ctx, il, x); err != nil {
			return err
		}
	}
	st.tokens = append(st.tokens, tokens...)
	return nil
}

// lora is W2·f(W1·x) for every row of x (f nil: identity).
func (s *Session) lora(ctx context.Context, w1, w2 *matrix, f func(float32) float32, x [][]float32) ([][]float32, error) {
	low := rows(len(x), w1.rows)
	if err := s.mul(ctx, w1, nil, x, low); err != nil {
		return nil, err
	}
	if f != nil {
		for _, r := range low {
			for i, v := range r {
				r[i] = f(v)
			}
		}
	}
	out := rows(len(x), w2.rows)
	return out, s.mul(ctx, w2, nil, low, out)
}

// sigmoid is ggml_sigmoid: 1 / (1 + e^−x).
func sigmoid(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }

// tokenShift writes, for each row t of cur, mix[j][t] = (prev − cur[t])·lerp[j] + cur[t]
// with prev the row before (shift for the first), and keeps the last row
// in shift.
func tokenShift(cur [][]float32, shift, lerp []float32, mix [][][]float32) {
	prev := shift
	e := len(shift)
	for t, c := range cur {
		for i, v := range c {
			sx := prev[i] - v
			for j := range mix {
				mix[j][t][i] = sx*lerp[j*e+i] + v
			}
		}
		prev = c
	}
	copy(shift, cur[len(cur)-1])
}

// rwkv7Block is one block: x += time_mix(ln1(x)); x += channel_mix(ln2(x))
// (arwkv7: RMS norms and x += swiglu(rms(x))). It returns block 0's values
// (v_first).
func (s *Session) rwkv7Block(ctx context.Context, il int, x, vFirst [][]float32) ([][]float32, error) {
	c, hs := s.m.cfg, s.m.cfg.rwkv.headSize
	ly := &s.m.rwkv[il]
	n, e := len(x), c.Embd
	shift := s.rwkv.shift[il]
	att := rows(n, e)
	for t := range x {
		s.norm(att[t], x[t], ly.attnNorm, ly.attnNormB)
	}
	gated := ly.g1 != nil && ly.g2 != nil
	mix := make([][][]float32, 5, 6) // r, w, k, v, a, g
	if gated {
		mix = mix[:6]
	}
	for j := range mix {
		mix[j] = rows(n, e)
	}
	tokenShift(att, shift[:e], ly.lerp, mix)
	r, k, v := rows(n, e), rows(n, e), rows(n, e)
	for _, p := range []struct {
		w   *matrix
		in  [][]float32
		out [][]float32
	}{{ly.recept, mix[0], r}, {ly.key, mix[2], k}, {ly.value, mix[3], v}} {
		if err := s.mul(ctx, p.w, nil, p.in, p.out); err != nil {
			return nil, err
		}
	}
	tanh := func(v float32) float32 { return float32(math.Tanh(float64(v))) }
	w, err := s.lora(ctx, ly.w1, ly.w2, tanh, mix[1])
	if err != nil {
		return nil, err
	}
	a, err := s.lora(ctx, ly.a1, ly.a2, nil, mix[4])
	if err != nil {
		return nil, err
	}
	var g [][]float32
	if gated {
		if g, err = s.lora(ctx, ly.g1, ly.g2, sigmoid, mix[5]); err != nil {
			return nil, err
		}
	}
	var vMix [][]float32
	if vFirst == nil {
		vFirst = v
	} else if vMix, err = s.lora(ctx, ly.v1, ly.v2, nil, mix[3]); err != nil {
		return nil, err
	}
	kk := rows(n, e)
	for t := range x {
		for i := range e {
			w[t][i] = float32(math.Exp(float64(-0.606531 * sigmoid(w[t][i]+ly.w0[i]))))
			a[t][i] = sigmoid(a[t][i] + ly.a0[i])
			if vMix != nil {
				v[t][i] += (vFirst[t][i] - v[t][i]) * sigmoid(vMix[t][i]+ly.v0[i])
			}
			kk[t][i] = k[t][i] * ly.kK[i]
			ka := k[t][i] * ly.kA[i]
			k[t][i] += a[t][i]*ka - ka
		}
		for h := 0; h < e; h += hs {
			// ggml_l2_norm, eps 1e-12.
			var sum float64
			for _, q := range kk[t][h : h+hs] {
				sum += float64(q * q)
			}
			scale := 1 / max(float32(math.Sqrt(sum)), 1e-12)
			for i := h; i < h+hs; i++ {
				kk[t][i] *= scale
			}
		}
	}
	y := rows(n, e)
	s.wkv7(il, r, w, k, v, kk, a, y)
	for t := range y {
		for h := 0; h < e; h += hs {
			yh := y[t][h : h+hs]
			if ly.lnX != nil && ly.lnXB != nil {
				layerNorm(yh, yh, nil, nil, 64e-5) // the group norm, one group per head
				for i := h; i < h+hs; i++ {
					y[t][i] = y[t][i]*ly.lnX[i] + ly.lnXB[i]
				}
			}
			var rk float32
			for i := h; i < h+hs; i++ {
				rk += k[t][i] * r[t][i] * ly.rK[i]
			}
			for i := h; i < h+hs; i++ {
				y[t][i] += v[t][i] * rk
				if gated {
					y[t][i] *= g[t][i]
				}
			}
		}
	}
	out := rows(n, e)
	if err := s.mul(ctx, ly.out, nil, y, out); err != nil {
		return nil, err
	}
	ffn := rows(n, e)
	for t := range x {
		for i := range x[t] {
			x[t][i] += out[t][i]
		}
		s.norm(ffn[t], x[t], ly.ffnNorm, ly.ffnNormB)
	}
	if ly.ffnGate != nil {
		if err := s.swiglu(ctx, ly.ffnGate, ly.ffnUp, ly.ffnDown, ffn, out); err != nil {
			return nil, err
		}
		for t := range x {
			for i := range x[t] {
				x[t][i] += out[t][i]
			}
		}
		return vFirst, nil
	}
	xk := [][][]float32{rows(n, e)}
	tokenShift(ffn, shift[e:], ly.cmLerpK, xk)
	kf := rows(n, ly.cmKey.rows)
	if err := s.mul(ctx, ly.cmKey, nil, xk[0], kf); err != nil {
		return nil, err
	}
	for _, row := range kf {
		for i, q := range row {
			q = max(q, 0)
			row[i] = q * q
		}
	}
	if err := s.mul(ctx, ly.cmVal, nil, kf, out); err != nil {
		return nil, err
	}
	for t := range x {
		for i := range x[t] {
			x[t][i] += out[t][i]
		}
	}
	return vFirst, nil
}

// wkv7 is ggml_rwkv_wkv7 with a = −k̂ and b = k̂·a: per token and head,
// for each value row i of the state, sa = Σ_j a_j·S[i][j], then
// S[i][j] = S[i][j]·w_j + v_i·k_j + sa·b_j and y_i = Σ_j S[i][j]·r_j.
func (s *Session) wkv7(il int, r, w, k, v, kk, a, y [][]float32) {
	hs := s.m.cfg.rwkv.headSize
	state := s.rwkv.wkv[il] // [head][i][j]
	e := s.m.cfg.Embd
	for t := range r {
		for h := 0; h < e; h += hs {
			st := state[h*hs : (h+hs)*hs]
			for i := range hs {
				row := st[i*hs : (i+1)*hs]
				var sa float32
				for j := range hs {
					sa += -kk[t][h+j] * row[j]
				}
				vi := v[t][h+i]
				var res float32
				for j := range hs {
					row[j] = row[j]*w[t][h+j] + vi*k[t][h+j] + sa*(kk[t][h+j]*a[t][h+j])
					res += row[j] * r[t][h+j]
				}
				y[t][h+i] = res
			}
		}
	}
}
