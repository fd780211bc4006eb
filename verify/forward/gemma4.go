package forward

import (
	"context"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// Gemma 4 (src/models/gemma4.cpp, dense text model) does not fit the
// table of arch.go: its layers differ in head width, rotated dimensions,
// key/value heads and FFN width (sliding vs full attention, the
// double-wide MLP of the KV-shared layers), the last layers reuse the keys
// and values of earlier ones, and per-layer embeddings feed every block.
// It has its own configuration, weights and evaluation here, built from
// the same operations.

// gemma4Config holds what differs per layer (llama_hparams' per-layer
// arrays) and the per-layer embedding width.
type gemma4Config struct {
	headDim, rot, headsKV, ff []int
	// kvFrom is n_layer_kv_from_start: layers from it on reuse the cache
	// of the last earlier layer of the same kind (sliding or full).
	kvFrom int
	// perLayer is n_embd_per_layer (0: no per-layer embeddings).
	perLayer int
}

// gemma4Layer holds one block's weights.
type gemma4Layer struct {
	attnNorm, qNorm, kNorm, attnPost, ffnNorm, ffnPost []float32
	wq, wk, wv, wo, gate, up, down                     *matrix
	plGate, plProj                                     *matrix
	plPost, outScale                                   []float32
	// Mixture of experts (gateInp non-nil): the router and its input
	// scale, the fused gate|up and the down projections of every expert,
	// the experts' output scales, and the norms around the two branches.
	gateInp                        *matrix
	gateInpScale, downExpsScale    []float32
	gateUpExps, downExps           []*matrix
	preNorm2, postNorm1, postNorm2 []float32
}

// gemma4Weights are the model-level extra tensors.
type gemma4Weights struct {
	plTokEmbd  Tensor
	plModelPrj *matrix
	plPrjNorm  []float32
	layers     []gemma4Layer
}

// parseGemma4 mirrors llama_model_gemma4::load_arch_hparams with the
// common keys of load_hparams it needs.
func parseGemma4(r *kvReader) (*Config, error) {
	c := &Config{Arch: r.arch, arch: &archInfo{norm: normRMS, rope: ropeNeox, embedScale: true}}
	for _, k := range []struct {
		suffix string
		dst    *int
	}{{gguf.SuffixContextLength, &c.CtxTrain}, {gguf.SuffixEmbeddingLength, &c.Embd}, {gguf.SuffixBlockCount, &c.Layers}} {
		if _, err := r.u32(r.key(k.suffix), k.dst, true); err != nil {
			return nil, err
		}
	}
	if c.Layers <= 0 || c.Layers > maxLayers || c.Embd <= 0 || c.Embd > maxDim {
		return nil, fmt.Errorf("%w: %d layers of width %d", ErrMetadata, c.Layers, c.Embd)
	}
	if _, err := r.u32(r.key(gguf.SuffixExpertCount), &c.Experts, false); err != nil {
		return nil, err
	}
	if c.Experts > 0 {
		if c.Experts > maxExperts {
			return nil, fmt.Errorf("%w: %d experts", ErrMetadata, c.Experts)
		}
		if _, err := r.u32(r.key(gguf.SuffixExpertUsedCount), &c.ExpertsUsed, true); err != nil {
			return nil, err
		}
		if _, err := r.u32(r.key(gguf.SuffixExpertFFLength), &c.FFExp, true); err != nil {
			return nil, err
		}
		if c.ExpertsUsed <= 0 || c.ExpertsUsed > c.Experts || c.FFExp <= 0 || c.FFExp > maxDim/2 {
			return nil, fmt.Errorf("%w: %d of %d experts of width %d", ErrMetadata, c.ExpertsUsed, c.Experts, c.FFExp)
		}
	}
	if err := c.readVocab(r); err != nil {
		return nil, err
	}
	g := &gemma4Config{}
	perLayer := func(key string, dst *[]int, def int) error {
		*dst = make([]int, c.Layers)
		for i := range *dst {
			(*dst)[i] = def
		}
		v, ok := r.md.KV(key)
		if !ok {
			return nil
		}
		if !v.IsArray() {
			var n int
			if _, err := r.u32(key, &n, true); err != nil {
				return err
			}
			for i := range *dst {
				(*dst)[i] = n
			}
			return nil
		}
		xs, ok := v.Ints()
		if !ok || len(xs) != c.Layers {
			return fmt.Errorf("%w: %s is not an array of %d counts", ErrMetadata, key, c.Layers)
		}
		for i, x := range xs {
			(*dst)[i] = int(x)
		}
		return nil
	}
	if err := perLayer(r.key(gguf.SuffixFeedForwardLength), &g.ff, 0); err != nil {
		return nil, err
	}
	var heads []int
	if err := perLayer(r.key(gguf.SuffixHeadCount), &heads, 0); err != nil {
		return nil, err
	}
	c.Heads = heads[0]
	for _, h := range heads {
		if h != c.Heads {
			return nil, fmt.Errorf("%w: gemma4 with head counts that differ between layers", ErrUnsupported)
		}
	}
	if err := perLayer(r.key(gguf.SuffixHeadCountKV), &g.headsKV, c.Heads); err != nil {
		return nil, err
	}
	c.SWA = make([]bool, c.Layers)
	if err := c.readSWAPattern(r, 0); err != nil {
		return nil, err
	}
	var shared int
	if _, err := r.u32(r.key("attention.shared_kv_layers"), &shared, false); err != nil {
		return nil, err
	}
	if shared < 0 || shared > c.Layers {
		return nil, fmt.Errorf("%w: %d shared KV layers of %d", ErrMetadata, shared, c.Layers)
	}
	g.kvFrom = c.Layers - shared
	if g.kvFrom < 2 {
		// GGML_ASSERT(hparams.n_layer_kv_from_start >= 2) in the cache's reuse callback.
		return nil, fmt.Errorf("%w: %d layers with %d shared KV layers (llama.cpp needs 2 that are not)", ErrMetadata, c.Layers, shared)
	}
	c.RopeBase, c.RopeBaseSWA, c.RopeFreqScale, c.RopeFreqScaleSWA, c.RopeAttnFactor = 10000, 10000, 1, 1, 1
	for _, k := range []struct {
		suffix   string
		dst      *float32
		required bool
	}{
		{gguf.SuffixRopeFreqBase, &c.RopeBase, false},
		{"rope.freq_base_swa", &c.RopeBaseSWA, false},
		{"attention.layer_norm_rms_epsilon", &c.NormEps, true},
		{"final_logit_softcapping", &c.FinalSoftcap, false},
	} {
		if _, err := r.f32(r.key(k.suffix), k.dst, k.required); err != nil {
			return nil, err
		}
	}
	var hdFull, hdSWA, vFull, vSWA, rotFull, rotSWA int
	for _, k := range []struct {
		suffix   string
		dst      *int
		required bool
	}{
		{gguf.SuffixKeyLength, &hdFull, true}, {gguf.SuffixValueLength, &vFull, true},
		{"attention.key_length_swa", &hdSWA, true}, {"attention.value_length_swa", &vSWA, true},
		{gguf.SuffixRopeDimensionCount, &rotFull, false}, {"rope.dimension_count_swa", &rotSWA, false},
		{"attention.sliding_window", &c.SlidingWindow, true},
		{"embedding_length_per_layer_input", &g.perLayer, true},
	} {
		if _, err := r.u32(r.key(k.suffix), k.dst, k.required); err != nil {
			return nil, err
		}
	}
	if hdFull != vFull || hdSWA != vSWA {
		return nil, fmt.Errorf("%w: Gemma 4 requires n_embd_head_k == n_embd_head_v", ErrMetadata)
	}
	if rotFull == 0 {
		rotFull = hdFull
	}
	if rotSWA == 0 {
		rotSWA = hdSWA
	}
	g.headDim, g.rot = make([]int, c.Layers), make([]int, c.Layers)
	for il := range c.Layers {
		g.headDim[il], g.rot[il] = hdFull, rotFull
		if c.SWA[il] {
			g.headDim[il], g.rot[il] = hdSWA, rotSWA
		}
		hd, kvh := g.headDim[il], g.headsKV[il]
		switch {
		case hd <= 0 || hd > maxDim || c.Heads <= 0 || c.Heads > maxDim/hd:
			return nil, fmt.Errorf("%w: layer %d: %d heads of width %d", ErrMetadata, il, c.Heads, hd)
		case kvh <= 0 || c.Heads%kvh != 0:
			return nil, fmt.Errorf("%w: layer %d: %d heads and %d key/value heads", ErrMetadata, il, c.Heads, kvh)
		case g.rot[il] < 0 || g.rot[il] > hd || g.rot[il]%2 != 0:
			return nil, fmt.Errorf("%w: layer %d: %d rotated dimensions of %d", ErrMetadata, il, g.rot[il], hd)
		case g.ff[il] <= 0 || g.ff[il] > maxDim:
			return nil, fmt.Errorf("%w: layer %d: feed-forward width %d", ErrMetadata, il, g.ff[il])
		}
	}
	if g.perLayer < 0 || g.perLayer > maxDim/c.Layers {
		return nil, fmt.Errorf("%w: per-layer embedding width %d", ErrMetadata, g.perLayer)
	}
	// The generic fields, for what reads them (sizes of token_embd, the
	// output); the per-layer ones are in g.
	c.HeadsKV, c.HeadDimK, c.HeadDimV, c.Rot, c.FF = g.headsKV[0], g.headDim[0], g.headDim[0], g.rot[0], g.ff[0]
	c.AttnScale = 1 // f_attention_scale: Q and K are RMS-normalised instead
	c.RopeScaling = "none"
	c.RopeBetaFast, c.RopeBetaSlow = 32, 1
	c.RopeOrigCtx = c.CtxTrain
	c.g4 = g
	return c, nil
}

// loadGemma4 is llama_model_gemma4::load_arch_tensors for a dense model.
func loadGemma4(cfg *Config, w Weights, threads int) (*Model, error) {
	g := cfg.g4
	m := &Model{cfg: cfg, threads: threads, g4: &gemma4Weights{}}
	var err error
	get := func(name string, shape []int64, optional bool) Tensor {
		if err != nil {
			return nil
		}
		t, ok := w.Tensor(name)
		if !ok {
			if !optional {
				err = fmt.Errorf("%w: missing tensor %s", ErrWeights, name)
			}
			return nil
		}
		if !gguf.SameShape(t.Shape(), shape) {
			err = fmt.Errorf("%w: tensor %s has shape %v, expected %v", ErrWeights, name, t.Shape(), shape)
			return nil
		}
		return t
	}
	mat := func(name string, shape []int64, optional bool) *matrix {
		t := get(name, shape, optional)
		if t == nil {
			return nil
		}
		return &matrix{name: name, tensor: name, expert: -1, t: t, cols: int(shape[0]), rows: int(shape[1])}
	}
	vec := func(name string, n int64, optional bool) []float32 {
		t := get(name, []int64{n}, optional)
		if t == nil {
			return nil
		}
		v := make([]float32, n)
		if e := t.ReadRows(0, 1, v); e != nil {
			err = fmt.Errorf("tensor %s: %w", name, e)
		}
		return v
	}
	E, V := int64(cfg.Embd), int64(cfg.Vocab)
	m.tokEmbd = get("token_embd.weight", []int64{E, V}, false)
	m.output = mat("output.weight", []int64{E, V}, true)
	m.outNorm = vec("output_norm.weight", E, false)
	PL := int64(g.perLayer)
	if PL > 0 {
		m.g4.plTokEmbd = get("per_layer_token_embd.weight", []int64{PL * int64(cfg.Layers), V}, false)
		m.g4.plModelPrj = mat("per_layer_model_proj.weight", []int64{E, PL * int64(cfg.Layers)}, false)
		m.g4.plPrjNorm = vec("per_layer_proj_norm.weight", PL, false)
	}
	if err != nil {
		return nil, err
	}
	if m.output == nil {
		m.output = &matrix{name: "token_embd.weight", t: m.tokEmbd, cols: int(E), rows: int(V)}
	}
	m.g4.layers = make([]gemma4Layer, cfg.Layers)
	for il := range m.g4.layers {
		ly := &m.g4.layers[il]
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", il, s) }
		hd, kv := int64(g.headDim[il]), int64(g.headsKV[il])
		q := hd * int64(cfg.Heads)
		hasKV := il < g.kvFrom
		ly.attnNorm = vec(b("attn_norm.weight"), E, false)
		ly.wq = mat(b("attn_q.weight"), []int64{E, q}, false)
		ly.wk = mat(b("attn_k.weight"), []int64{E, hd * kv}, !hasKV)
		ly.wv = mat(b("attn_v.weight"), []int64{E, hd * kv}, true)
		ly.wo = mat(b("attn_output.weight"), []int64{q, E}, false)
		ly.qNorm = vec(b("attn_q_norm.weight"), hd, false)
		ly.kNorm = vec(b("attn_k_norm.weight"), hd, !hasKV)
		ly.attnPost = vec(b("post_attention_norm.weight"), E, false)
		ly.outScale = vec(b("layer_output_scale.weight"), 1, true)
		ff := int64(g.ff[il])
		ly.ffnNorm = vec(b("ffn_norm.weight"), E, false)
		ly.gate = mat(b("ffn_gate.weight"), []int64{E, ff}, false)
		ly.up = mat(b("ffn_up.weight"), []int64{E, ff}, false)
		ly.down = mat(b("ffn_down.weight"), []int64{ff, E}, false)
		ly.ffnPost = vec(b("post_ffw_norm.weight"), E, false)
		if cfg.Experts > 0 {
			n, fe := int64(cfg.Experts), int64(cfg.FFExp)
			ly.gateInp = mat(b("ffn_gate_inp.weight"), []int64{E, n}, true)
			if ly.gateInp != nil {
				ly.gateInpScale = vec(b("ffn_gate_inp.scale"), E, false)
				ly.preNorm2 = vec(b("pre_ffw_norm_2.weight"), E, false)
				ly.postNorm1 = vec(b("post_ffw_norm_1.weight"), E, false)
				ly.postNorm2 = vec(b("post_ffw_norm_2.weight"), E, false)
				ly.downExpsScale = vec(b("ffn_down_exps.scale"), n, true)
				gu := get(b("ffn_gate_up_exps.weight"), []int64{E, 2 * fe, n}, false)
				dn := get(b("ffn_down_exps.weight"), []int64{fe, E, n}, false)
				for e := range cfg.Experts {
					if gu == nil || dn == nil {
						break
					}
					ly.gateUpExps = append(ly.gateUpExps, &matrix{name: fmt.Sprintf("%s[%d]", b("ffn_gate_up_exps.weight"), e), tensor: b("ffn_gate_up_exps.weight"), expert: e, experts: cfg.Experts, t: gu, cols: int(E), rows: int(2 * fe), off: e * int(2*fe)})
					ly.downExps = append(ly.downExps, &matrix{name: fmt.Sprintf("%s[%d]", b("ffn_down_exps.weight"), e), tensor: b("ffn_down_exps.weight"), expert: e, experts: cfg.Experts, t: dn, cols: int(fe), rows: int(E), off: e * int(E)})
				}
			}
		}
		if PL > 0 {
			ly.plGate = mat(b("inp_gate.weight"), []int64{E, PL}, false)
			ly.plProj = mat(b("proj.weight"), []int64{PL, E}, false)
			ly.plPost = vec(b("post_norm.weight"), E, false)
		}
		if hasKV && ly.wk == nil {
			err = fmt.Errorf("%w: missing tensor %s", ErrWeights, b("attn_k.weight"))
		}
		if !cfg.SWA[il] && m.ropeFreqs == nil {
			m.ropeFreqs = vec("rope_freqs.weight", hd/2, false)
		}
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

// gemma4KVSource is the layer whose cache layer il reads: itself, or for
// a KV-shared layer (il ≥ n_layer_kv_from_start) the layer llama.cpp's
// iSWA cache reuses (llama_model::create_memory's reuse callback):
// n_layer_kv_from_start − 2 for a sliding-window layer, − 1 for a full one.
func (c *Config) gemma4KVSource(il int) (int, error) {
	g := c.g4
	if il < g.kvFrom {
		return il, nil
	}
	src := g.kvFrom - 1
	if c.SWA[il] {
		src = g.kvFrom - 2
	}
	if src < 0 || g.headDim[src] != g.headDim[il] || g.headsKV[src] != g.headsKV[il] {
		return -1, fmt.Errorf("%w: layer %d would reuse the cache of layer %d, which has other key/value widths", ErrUnsupported, il, src)
	}
	return src, nil
}

// evalGemma4 is llama_model_gemma4::graph for a batch of tokens at the
// next positions; x holds the scaled token embeddings on entry.
func (s *Session) evalGemma4(ctx context.Context, tokens []int, x [][]float32) error {
	m, c := s.m, s.m.cfg
	g, gw := c.g4, m.g4
	var pl [][]float32 // per token: n_layer·n_pl
	if g.perLayer > 0 {
		var err error
		if pl, err = s.perLayerInputs(ctx, tokens, x, gw.plTokEmbd, gw.plModelPrj, gw.plPrjNorm, g.perLayer); err != nil {
			return err
		}
	}
	for il := range c.Layers {
		if err := s.gemma4Layer(ctx, il, x, pl); err != nil {
			return err
		}
	}
	return nil
}

// perLayerInputs is project_per_layer_inputs of gemma3n and gemma4: for
// each token, per block, (rms_norm(W·x / √n_embd) + √n_pl · ple[token]) / √2,
// x being the scaled token embeddings.
func (s *Session) perLayerInputs(ctx context.Context, tokens []int, x [][]float32, tokEmbd Tensor, proj *matrix, norm []float32, PL int) ([][]float32, error) {
	c := s.m.cfg
	T, L := len(tokens), c.Layers
	pl := rows(T, L*PL)
	if err := s.mul(ctx, proj, nil, x, pl); err != nil {
		return nil, err
	}
	emb := make([]float32, L*PL)
	sEmb := float32(math.Sqrt(float64(float32(PL))))
	sPrj := 1 / float32(math.Sqrt(float64(float32(c.Embd))))
	sIn := 1 / float32(math.Sqrt(2))
	for t, id := range tokens {
		if err := tokEmbd.ReadRows(id, 1, emb); err != nil {
			return nil, fmt.Errorf("per_layer_token_embd.weight row %d: %w", id, err)
		}
		for il := range L {
			seg := pl[t][il*PL : (il+1)*PL]
			for i := range seg {
				seg[i] *= sPrj
			}
			rmsNorm(seg, seg, norm, c.NormEps)
			for i := range seg {
				seg[i] = (seg[i] + emb[il*PL+i]*sEmb) * sIn
			}
		}
	}
	return pl, nil
}

func (s *Session) gemma4Layer(ctx context.Context, il int, x, pl [][]float32) error {
	c, ly := s.m.cfg, &s.m.g4.layers[il]
	g := c.g4
	T := len(x)
	hd, kvh, nrot := g.headDim[il], g.headsKV[il], g.rot[il]
	h := rows(T, c.Embd)
	for t := range x {
		rmsNorm(h[t], x[t], ly.attnNorm, c.NormEps)
	}
	src, err := c.gemma4KVSource(il)
	if err != nil {
		return err
	}
	a := gemmaAttn{wq: ly.wq, wk: ly.wk, wv: ly.wv, wo: ly.wo, qNorm: ly.qNorm, kNorm: ly.kNorm,
		headDim: hd, headsKV: kvh, rot: nrot, src: src, srcHeadsKV: g.headsKV[src], base: c.RopeBase, factors: s.factors}
	if c.SWA[il] {
		a.base, a.factors = c.RopeBaseSWA, nil
	}
	o, err := s.gemmaAttention(ctx, il, a, h)
	if err != nil {
		return err
	}
	for t := range o {
		rmsNorm(o[t], o[t], ly.attnPost, c.NormEps)
		for i := range o[t] {
			x[t][i] += o[t][i]
		}
		rmsNorm(h[t], x[t], ly.ffnNorm, c.NormEps)
	}
	f := rows(T, c.Embd)
	if err := s.geglu(ctx, ly.gate, ly.up, ly.down, h, f); err != nil {
		return err
	}
	if ly.gateInp != nil {
		// The dense MLP acts as a shared expert: both branches are
		// normalised and added before the common post-FFN norm.
		if err := s.gemma4MoE(ctx, ly, x, f); err != nil {
			return err
		}
	}
	for t := range f {
		rmsNorm(f[t], f[t], ly.ffnPost, c.NormEps)
		for i := range f[t] {
			x[t][i] += f[t][i]
		}
	}
	if pl != nil {
		PL := g.perLayer
		p := rows(T, PL)
		if err := s.mul(ctx, ly.plGate, nil, x, p); err != nil {
			return err
		}
		for t := range p {
			in := pl[t][il*PL : (il+1)*PL]
			for i, v := range p[t] {
				p[t][i] = gelu(v) * in[i]
			}
		}
		e := rows(T, c.Embd)
		if err := s.mul(ctx, ly.plProj, nil, p, e); err != nil {
			return err
		}
		for t := range e {
			rmsNorm(e[t], e[t], ly.plPost, c.NormEps)
			for i := range e[t] {
				x[t][i] += e[t][i]
			}
		}
	}
	if ly.outScale != nil {
		for t := range x {
			for i := range x[t] {
				x[t][i] *= ly.outScale[0]
			}
		}
	}
	return nil
}

// gemmaAttn is one block's attention as gemma3n and gemma4 run it.
type gemmaAttn struct {
	wq, wk, wv, wo        *matrix
	qNorm, kNorm          []float32
	headDim, headsKV, rot int
	// src is the block whose cache the attention reads (a KV-shared block
	// reads an earlier one's), srcHeadsKV its key/value heads.
	src, srcHeadsKV int
	base            float32
	factors         []float32
}

// gemmaAttention is the attention of a gemma3n or gemma4 block: Q from h,
// RMS-normalised per head and NeoX-rotated; on a block with its own cache,
// K likewise and V (attn_v, else K's projection) RMS-normalised without a
// weight, appended to the cache; soft-max (scale AttnScale) over block
// a.src's cache within the sliding window; the output projection.
func (s *Session) gemmaAttention(ctx context.Context, il int, a gemmaAttn, h [][]float32) ([][]float32, error) {
	c := s.m.cfg
	T, hd, kvh := len(h), a.headDim, a.headsKV
	cache := make([]float32, a.rot)
	ropeHeads := func(r []float32, n int, pos int) {
		ropeCache(cache, pos, a.rot, a.base, 1, a.factors, c)
		for hh := range n {
			rope(r[hh*hd:], cache, a.rot, ropeNeox)
		}
	}
	q := rows(T, c.Heads*hd)
	if err := s.mul(ctx, a.wq, nil, h, q); err != nil {
		return nil, err
	}
	for t := range q {
		for hh := range c.Heads {
			seg := q[t][hh*hd : (hh+1)*hd]
			rmsNorm(seg, seg, a.qNorm, c.NormEps)
		}
		ropeHeads(q[t], c.Heads, s.n+t)
	}
	if a.src == il {
		k, v := rows(T, kvh*hd), rows(T, kvh*hd)
		if err := s.mul(ctx, a.wk, nil, h, k); err != nil {
			return nil, err
		}
		if a.wv != nil {
			if err := s.mul(ctx, a.wv, nil, h, v); err != nil {
				return nil, err
			}
		} else {
			for t := range k {
				copy(v[t], k[t])
			}
		}
		for t := range k {
			for hh := range kvh {
				ks := k[t][hh*hd : (hh+1)*hd]
				rmsNorm(ks, ks, a.kNorm, c.NormEps)
				vs := v[t][hh*hd : (hh+1)*hd]
				rmsNormPlain(vs, vs, c.NormEps)
			}
			ropeHeads(k[t], kvh, s.n+t)
			kd, vd := s.k[il][(s.n+t)*kvh*hd:][:len(k[t])], s.v[il][(s.n+t)*kvh*hd:][:len(v[t])]
			copy(kd, k[t])
			copy(vd, v[t])
			if s.m.kvF16 {
				roundFP16(kd)
				roundFP16(vd)
			}
		}
	}
	att := rows(T, c.Heads*hd)
	keys, vals := s.k[a.src], s.v[a.src]
	group := c.Heads / a.srcHeadsKV
	for t := range q {
		pos := s.n + t
		lo := 0
		if c.SWA[il] && c.SlidingWindow > 0 {
			lo = max(0, pos-c.SlidingWindow+1)
		}
		scores := make([]float32, pos+1-lo)
		for hh := range c.Heads {
			gh := hh / group
			qh := q[t][hh*hd : (hh+1)*hd]
			for j := lo; j <= pos; j++ {
				off := (j*a.srcHeadsKV + gh) * hd
				scores[j-lo] = dot(qh, keys[off:off+hd])
			}
			softmax(scores, c.AttnScale)
			o := att[t][hh*hd : (hh+1)*hd]
			for j := lo; j <= pos; j++ {
				p := scores[j-lo]
				off := (j*a.srcHeadsKV + gh) * hd
				for d, xv := range vals[off : off+hd] {
					o[d] += p * xv
				}
			}
		}
	}
	o := rows(T, c.Embd)
	if err := s.mul(ctx, a.wo, nil, att, o); err != nil {
		return nil, err
	}
	return o, nil
}

// gemma4Tensors is ExpectedTensors for gemma4: load_arch_tensors of a dense
// model, in its order (rope_freqs once, with the first full-attention
// layer; the KV-shared layers' key projection and norm optional).
func (c *Config) gemma4Tensors(present func(name string) bool) []TensorSpec {
	g := c.g4
	E, V, PL, L := int64(c.Embd), int64(c.Vocab), int64(g.perLayer), int64(c.Layers)
	out := []TensorSpec{
		{Name: "output.weight", Shape: []int64{E, V}, Optional: true},
		{Name: "token_embd.weight", Shape: []int64{E, V}},
	}
	if PL > 0 {
		out = append(out,
			TensorSpec{Name: "per_layer_token_embd.weight", Shape: []int64{PL * L, V}},
			TensorSpec{Name: "per_layer_model_proj.weight", Shape: []int64{E, PL * L}},
			TensorSpec{Name: "per_layer_proj_norm.weight", Shape: []int64{PL}})
	}
	out = append(out, TensorSpec{Name: "output_norm.weight", Shape: []int64{E}})
	freqs := false
	for il := range c.Layers {
		hd, kv, ff := int64(g.headDim[il]), int64(g.headsKV[il]), int64(g.ff[il])
		q := hd * int64(c.Heads)
		noKV := il >= g.kvFrom
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", il, s) }
		out = append(out,
			TensorSpec{Name: b("attn_norm.weight"), Shape: []int64{E}},
			TensorSpec{Name: b("attn_q.weight"), Shape: []int64{E, q}},
			TensorSpec{Name: b("attn_k.weight"), Shape: []int64{E, hd * kv}, Optional: noKV},
			TensorSpec{Name: b("attn_v.weight"), Shape: []int64{E, hd * kv}, Optional: true},
			TensorSpec{Name: b("attn_output.weight"), Shape: []int64{q, E}},
			TensorSpec{Name: b("attn_q_norm.weight"), Shape: []int64{hd}},
			TensorSpec{Name: b("attn_k_norm.weight"), Shape: []int64{hd}, Optional: noKV},
			TensorSpec{Name: b("post_attention_norm.weight"), Shape: []int64{E}},
			TensorSpec{Name: b("layer_output_scale.weight"), Shape: []int64{1}, Optional: true})
		if !c.SWA[il] && !freqs {
			out = append(out, TensorSpec{Name: "rope_freqs.weight", Shape: []int64{hd / 2}})
			freqs = true
		}
		out = append(out,
			TensorSpec{Name: b("ffn_norm.weight"), Shape: []int64{E}},
			TensorSpec{Name: b("ffn_gate.weight"), Shape: []int64{E, ff}},
			TensorSpec{Name: b("ffn_up.weight"), Shape: []int64{E, ff}},
			TensorSpec{Name: b("ffn_down.weight"), Shape: []int64{ff, E}},
			TensorSpec{Name: b("post_ffw_norm.weight"), Shape: []int64{E}})
		if c.Experts > 0 {
			n, fe := int64(c.Experts), int64(c.FFExp)
			out = append(out, TensorSpec{Name: b("ffn_gate_inp.weight"), Shape: []int64{E, n}, Optional: true})
			if present(b("ffn_gate_inp.weight")) {
				out = append(out,
					TensorSpec{Name: b("ffn_gate_inp.scale"), Shape: []int64{E}},
					TensorSpec{Name: b("pre_ffw_norm_2.weight"), Shape: []int64{E}},
					TensorSpec{Name: b("post_ffw_norm_1.weight"), Shape: []int64{E}},
					TensorSpec{Name: b("post_ffw_norm_2.weight"), Shape: []int64{E}},
					TensorSpec{Name: b("ffn_gate_up_exps.weight"), Shape: []int64{E, 2 * fe, n}},
					TensorSpec{Name: b("ffn_down_exps.weight"), Shape: []int64{fe, E, n}},
					TensorSpec{Name: b("ffn_down_exps.scale"), Shape: []int64{n}, Optional: true})
			}
		}
		if PL > 0 {
			out = append(out,
				TensorSpec{Name: b("inp_gate.weight"), Shape: []int64{E, PL}},
				TensorSpec{Name: b("proj.weight"), Shape: []int64{PL, E}},
				TensorSpec{Name: b("post_norm.weight"), Shape: []int64{E}})
		}
	}
	return out
}

// geglu computes down(gelu(gate·x) ⊙ up·x) for the rows x (build_ffn
// with LLM_FFN_GELU, LLM_FFN_PAR).
func (s *Session) geglu(ctx context.Context, gate, up, down *matrix, x, out [][]float32) error {
	g, u := rows(len(x), gate.rows), rows(len(x), up.rows)
	if err := s.mul(ctx, up, nil, x, u); err != nil {
		return err
	}
	if err := s.mul(ctx, gate, nil, x, g); err != nil {
		return err
	}
	for t := range g {
		for i, v := range g[t] {
			g[t][i] = gelu(v) * u[t][i]
		}
	}
	return s.mul(ctx, down, nil, g, out)
}

// gemma4MoE turns f, the dense MLP's output for the layer input x (the
// attention output plus residual), into post_ffw_norm_1(f) +
// post_ffw_norm_2(experts(pre_ffw_norm_2(x))): the router reads
// rms_norm(x) / √n_embd ⊙ ffn_gate_inp.scale, soft-max over the experts,
// the top ExpertsUsed renormalised; each expert is a GeGLU of its fused
// gate|up projection, its down projection's output scaled by
// ffn_down_exps.scale (build_moe_ffn).
func (s *Session) gemma4MoE(ctx context.Context, ly *gemma4Layer, x, f [][]float32) error {
	c := s.m.cfg
	T, k, E := len(x), c.ExpertsUsed, c.Embd
	ones := make([]float32, E)
	for i := range ones {
		ones[i] = 1
	}
	rin, hin := rows(T, E), rows(T, E)
	inv := 1 / float32(math.Sqrt(float64(float32(E))))
	for t := range x {
		rmsNorm(rin[t], x[t], ones, c.NormEps)
		for i := range rin[t] {
			rin[t][i] = rin[t][i] * inv * ly.gateInpScale[i]
		}
		rmsNorm(hin[t], x[t], ly.preNorm2, c.NormEps)
		rmsNorm(f[t], f[t], ly.postNorm1, c.NormEps)
	}
	probs := rows(T, c.Experts)
	if err := s.mul(ctx, ly.gateInp, nil, rin, probs); err != nil {
		return err
	}
	out := rows(T, E)
	for t, p := range probs {
		softmax(p, 1)
		sel := topK(p, k)
		var sum float64
		for _, e := range sel {
			sum += float64(p[e])
		}
		d := max(float32(sum), 6.103515625e-5)
		for _, e := range sel {
			w := p[e] / d
			fe := c.FFExp
			gu := rows(1, 2*fe)
			if err := s.mul(ctx, ly.gateUpExps[e], nil, hin[t:t+1], gu); err != nil {
				return err
			}
			act := rows(1, fe)
			for i := range act[0] {
				act[0][i] = gelu(gu[0][i]) * gu[0][fe+i]
			}
			y := rows(1, E)
			if err := s.mul(ctx, ly.downExps[e], nil, act, y); err != nil {
				return err
			}
			scale := float32(1)
			if ly.downExpsScale != nil {
				scale = ly.downExpsScale[e]
			}
			for i, v := range y[0] {
				out[t][i] += (v * scale) * w
			}
		}
	}
	for t := range out {
		rmsNorm(out[t], out[t], ly.postNorm2, c.NormEps)
		for i := range f[t] {
			f[t][i] += out[t][i]
		}
	}
	return nil
}
