package forward

import (
	"context"
	"fmt"
	"math"
)

// Gemma 3n's text model (src/models/gemma3n.cpp) carries n_altup streams
// of the hidden state (AltUp): each block predicts all of them from the
// active one, runs attention (with LAuReL, a low-rank side branch) and a
// GeGLU FFN (activation-sparse on the first blocks) on the active
// prediction, corrects the streams by what the block changed, and adds a
// per-layer embedding to the others. Its standard tensors load into the
// generic layer struct; the AltUp, LAuReL and per-layer ones live here.

// gemma3nConfig holds the hyperparameters llama.cpp fixes for gemma3n
// (llama_hparams' defaults and llama_model_gemma3n's constants: it reads
// none of the converter's altup.*, embedding_length_per_layer_input,
// shared_kv_layers or activation_sparsity_scale keys, so only the
// E2B/E4B shapes load).
type gemma3nConfig struct {
	altup, active int // n_altup streams, the active one (i_altup_act)
	laurelRank    int
	perLayer      int // n_embd_altup: the per-layer embedding width
	// kvFrom is n_layer_kv_from_start: blocks from it on reuse the cache
	// of an earlier block (as gemma4KVSource says).
	kvFrom int
	// sparseLayers blocks from the first apply gaussian_topk to the FFN
	// gate, cutting at mean + sparseStd·std.
	sparseLayers int
	sparseStd    float32
	// populationStd divides gaussian_topk's variance by n, as transformers
	// does (torch.std(unbiased=False)); llama.cpp divides by n − 1, and so
	// does this package. Only a test sets it, to show that the rest of a
	// gemma3n forward pass agrees with transformers.
	populationStd bool
}

// gemma3nHparams mirrors llama_model_gemma3n::load_arch_hparams: a
// sliding-window pattern of 5 unless given, n_layer_kv_from_start 20,
// attention scale 1 (Q and K are RMS-normalised), the SWA rope base, the
// window and the RMS epsilon; the final soft-cap is llama_hparams' default
// of 30, not read.
func gemma3nHparams(c *Config, r *kvReader) error {
	if err := c.readSWAPattern(r, 5); err != nil {
		return err
	}
	c.g3n = &gemma3nConfig{altup: 4, laurelRank: 64, perLayer: 256, kvFrom: 20, sparseLayers: 10, sparseStd: 1.6448533535003662}
	c.AttnScale = 1
	c.FinalSoftcap = 30
	if _, err := r.f32(r.key("rope.freq_base_swa"), &c.RopeBaseSWA, false); err != nil {
		return err
	}
	if _, err := r.u32(r.key("attention.sliding_window"), &c.SlidingWindow, true); err != nil {
		return err
	}
	return rmsEps(c, r)
}

// gemma3nWeights are gemma3n's tensors beyond the generic layer's.
type gemma3nWeights struct {
	altupProj, altupUnembd []*matrix // n_altup−1 each
	plTokEmbd              Tensor
	plModelPrj             *matrix
	plPrjNorm              []float32
	layers                 []gemma3nLayer
}

type gemma3nLayer struct {
	plGate, plProj                   *matrix
	plPost                           []float32
	correctCoef, predictCoef, router *matrix
	correctScale, routerNorm         []float32
	laurelL, laurelR                 *matrix
	laurelPost                       []float32
}

// loadGemma3n reads gemma3n's own tensors (shapes checked by l).
func loadGemma3n(l *loader, cfg *Config) (*gemma3nWeights, error) {
	w := &gemma3nWeights{layers: make([]gemma3nLayer, cfg.Layers)}
	var err error
	mat := func(dst **matrix, name string) {
		if err == nil {
			*dst, err = l.mat(name)
		}
	}
	vec := func(dst *[]float32, name string) {
		if err == nil {
			*dst, err = l.vec(name)
		}
	}
	if w.altupProj, err = l.experts("altup_proj.weight"); err != nil {
		return nil, err
	}
	if w.altupUnembd, err = l.experts("altup_unembd_proj.weight"); err != nil {
		return nil, err
	}
	if w.plTokEmbd, err = l.tensor("per_layer_token_embd.weight"); err != nil {
		return nil, err
	}
	mat(&w.plModelPrj, "per_layer_model_proj.weight")
	vec(&w.plPrjNorm, "per_layer_proj_norm.weight")
	for il := range w.layers {
		ly := &w.layers[il]
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", il, s) }
		mat(&ly.plGate, b("inp_gate.weight"))
		mat(&ly.plProj, b("proj.weight"))
		vec(&ly.plPost, b("post_norm.weight"))
		mat(&ly.correctCoef, b("altup_correct_coef.weight"))
		vec(&ly.correctScale, b("altup_correct_scale.weight"))
		mat(&ly.predictCoef, b("altup_predict_coef.weight"))
		mat(&ly.router, b("altup_router.weight"))
		vec(&ly.routerNorm, b("altup_router_norm.weight"))
		mat(&ly.laurelL, b("laurel_l.weight"))
		mat(&ly.laurelR, b("laurel_r.weight"))
		vec(&ly.laurelPost, b("laurel_post_norm.weight"))
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

// magnitude is calc_magnitude: √Σx² (ggml_sqr, ggml_sum_rows in double,
// ggml_sqrt).
func magnitude(x []float32) float32 {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	return float32(math.Sqrt(float64(float32(sum))))
}

// rescale projects x by each of ws and rescales every projection to the
// magnitude of ref (per token): the extra AltUp streams at the start
// (altup_proj, from the embeddings) and the end (altup_unembd_proj).
func (s *Session) rescale(ctx context.Context, ws []*matrix, x [][][]float32, ref [][]float32) ([][][]float32, error) {
	out := make([][][]float32, len(ws))
	for k, w := range ws {
		out[k] = rows(len(ref), s.m.cfg.Embd)
		if err := s.mul(ctx, w, nil, x[k], out[k]); err != nil {
			return nil, err
		}
		for t, r := range out[k] {
			target, now := magnitude(ref[t]), magnitude(r)
			for i, v := range r {
				r[i] = v * target / now
			}
		}
	}
	return out, nil
}

// evalGemma3n is llama_model_gemma3n::graph for a batch of tokens at the
// next positions; x holds the scaled token embeddings on entry and the
// merged hidden state (before the output norm) on return.
func (s *Session) evalGemma3n(ctx context.Context, tokens []int, x [][]float32) error {
	c, w := s.m.cfg, s.m.g3n
	g := c.g3n
	pl, err := s.perLayerInputs(ctx, tokens, x, w.plTokEmbd, w.plModelPrj, w.plPrjNorm, g.perLayer)
	if err != nil {
		return err
	}
	same := make([][][]float32, g.altup-1)
	for k := range same {
		same[k] = x
	}
	extra, err := s.rescale(ctx, w.altupProj, same, x)
	if err != nil {
		return err
	}
	streams := append([][][]float32{x}, extra...)
	for il := range c.Layers {
		if streams, err = s.gemma3nLayer(ctx, il, streams, pl); err != nil {
			return err
		}
	}
	// Back to one stream: the mean of stream 0 and the others projected
	// by altup_unembd_proj at the active stream's magnitude.
	extra, err = s.rescale(ctx, w.altupUnembd, streams[1:], streams[g.active])
	if err != nil {
		return err
	}
	inv := 1 / float32(g.altup)
	for t := range x {
		for i := range x[t] {
			v := streams[0][t][i]
			for _, e := range extra {
				v += e[t][i]
			}
			x[t][i] = v * inv
		}
	}
	return nil
}

// routerModalities is altup_compute_router_modalities:
// tanh(altup_router · rms_norm(x)/n_embd) per token.
func (s *Session) routerModalities(ctx context.Context, ly *gemma3nLayer, x [][]float32) ([][]float32, error) {
	c := s.m.cfg
	in := rows(len(x), c.Embd)
	scale := 1 / float32(c.Embd)
	for t := range x {
		rmsNorm(in[t], x[t], ly.routerNorm, c.NormEps)
		for i := range in[t] {
			in[t][i] *= scale
		}
	}
	m := rows(len(x), c.g3n.altup)
	if err := s.mul(ctx, ly.router, nil, in, m); err != nil {
		return nil, err
	}
	for _, r := range m {
		for i, v := range r {
			r[i] = float32(math.Tanh(float64(v)))
		}
	}
	return m, nil
}

// gemma3nLayer runs block il on the AltUp streams and returns the new ones.
func (s *Session) gemma3nLayer(ctx context.Context, il int, streams [][][]float32, pl [][]float32) ([][][]float32, error) {
	c, ly, xl := s.m.cfg, &s.m.g3n.layers[il], &s.m.layers[il]
	g := c.g3n
	T, E, n := len(streams[0]), c.Embd, g.altup

	// altup_predict: stream j + Σ_k coef[j·n+k]·stream k, the
	// coefficients from the active stream's modalities.
	mod, err := s.routerModalities(ctx, ly, streams[g.active])
	if err != nil {
		return nil, err
	}
	coefs := rows(T, n*n)
	if err := s.mul(ctx, ly.predictCoef, nil, mod, coefs); err != nil {
		return nil, err
	}
	pred := make([][][]float32, n)
	for j := range pred {
		pred[j] = rows(T, E)
		for t := range T {
			cf := coefs[t][j*n : (j+1)*n]
			for i := range E {
				var v float32
				for k := range n {
					v += streams[k][t][i] * cf[k]
				}
				pred[j][t][i] = v + streams[j][t][i]
			}
		}
	}
	active := pred[g.active]

	h := rows(T, E)
	for t := range h {
		rmsNorm(h[t], active[t], xl.attnNorm, c.NormEps)
	}
	// LAuReL: h + norm(laurel_r · laurel_l · h).
	lr := rows(T, g.laurelRank)
	if err := s.mul(ctx, ly.laurelL, nil, h, lr); err != nil {
		return nil, err
	}
	laurel := rows(T, E)
	if err := s.mul(ctx, ly.laurelR, nil, lr, laurel); err != nil {
		return nil, err
	}
	for t := range laurel {
		rmsNorm(laurel[t], laurel[t], ly.laurelPost, c.NormEps)
		for i := range laurel[t] {
			laurel[t][i] += h[t][i]
		}
	}

	src := il
	if il >= g.kvFrom {
		src = g.kvFrom - 1
		if c.SWA[il] {
			src = g.kvFrom - 2
		}
	}
	a := gemmaAttn{wq: xl.wq, wk: xl.wk, wv: xl.wv, wo: xl.wo, qNorm: xl.qNorm, kNorm: xl.kNorm,
		headDim: c.HeadDimK, headsKV: c.HeadsKV, rot: c.Rot, src: src, srcHeadsKV: c.HeadsKV,
		base: c.RopeBase}
	if c.SWA[il] {
		a.base = c.RopeBaseSWA
	}
	o, err := s.gemmaAttention(ctx, il, a, h)
	if err != nil {
		return nil, err
	}
	// (post_norm(attn) + active + laurel) / √2, then the FFN's pre-norm.
	inv2 := 1 / float32(math.Sqrt(2))
	for t := range o {
		rmsNorm(o[t], o[t], xl.attnPost, c.NormEps)
		for i := range o[t] {
			o[t][i] = ((o[t][i] + active[t][i]) + laurel[t][i]) * inv2
		}
		rmsNorm(h[t], o[t], xl.ffnNorm, c.NormEps)
	}
	f := rows(T, E)
	sparse := il < g.sparseLayers
	if err := s.gemma3nFFN(ctx, xl, sparse, h, f); err != nil {
		return nil, err
	}
	for t := range f {
		rmsNorm(f[t], f[t], xl.ffnPost, c.NormEps)
		for i := range f[t] {
			f[t][i] += o[t][i]
		}
	}

	// altup_correct: prediction j + (block output − active prediction)
	// · (coef_j + 1), the coefficients from the output's modalities.
	mod, err = s.routerModalities(ctx, ly, f)
	if err != nil {
		return nil, err
	}
	cc := rows(T, n)
	if err := s.mul(ctx, ly.correctCoef, nil, mod, cc); err != nil {
		return nil, err
	}
	innov := rows(T, E)
	for t := range innov {
		for i := range innov[t] {
			innov[t][i] = f[t][i] - active[t][i]
		}
	}
	for j := range pred {
		for t := range T {
			cf := cc[t][j] + 1
			for i := range E {
				pred[j][t][i] += innov[t][i] * cf
			}
		}
	}
	// The per-layer input: norm(proj(gelu(inp_gate · (corrected active ⊙
	// altup_correct_scale)) ⊙ per-layer input)), added to streams 1…n−1.
	first := rows(T, E)
	for t := range first {
		for i := range first[t] {
			first[t][i] = pred[g.active][t][i] * ly.correctScale[i]
		}
	}
	p := rows(T, g.perLayer)
	if err := s.mul(ctx, ly.plGate, nil, first, p); err != nil {
		return nil, err
	}
	for t := range p {
		in := pl[t][il*g.perLayer : (il+1)*g.perLayer]
		for i, v := range p[t] {
			p[t][i] = gelu(v) * in[i]
		}
	}
	if err := s.mul(ctx, ly.plProj, nil, p, first); err != nil {
		return nil, err
	}
	for t := range first {
		rmsNorm(first[t], first[t], ly.plPost, c.NormEps)
		for _, sj := range pred[1:] {
			for i := range sj[t] {
				sj[t][i] += first[t][i]
			}
		}
	}
	return pred, nil
}

// gemma3nFFN is the block's GeGLU, gaussian_topk applied to the gate on
// the activation-sparse blocks: relu(x − (mean + sparseStd·std)), the
// standard deviation over n − 1 (ggml_sum_rows of the squared deviations
// scaled by 1/(ne0 − 1)).
func (s *Session) gemma3nFFN(ctx context.Context, ly *layer, sparse bool, h, out [][]float32) error {
	c := s.m.cfg
	up, gate := rows(len(h), c.FF), rows(len(h), c.FF)
	if err := s.mul(ctx, ly.up, nil, h, up); err != nil {
		return err
	}
	if err := s.mul(ctx, ly.gate, nil, h, gate); err != nil {
		return err
	}
	for t, r := range gate {
		if sparse {
			var sum float64
			for _, v := range r {
				sum += float64(v)
			}
			mean := float32(sum) / float32(len(r)) // ggml_mean
			var sq float64
			for _, v := range r {
				d := v - mean
				sq += float64(d * d)
			}
			dof := len(r) - 1
			if c.g3n.populationStd {
				dof = len(r)
			}
			std := float32(math.Sqrt(float64(float32(sq) * (1 / float32(dof)))))
			cut := mean + std*c.g3n.sparseStd
			for i, v := range r {
				r[i] = max(v-cut, 0)
			}
		}
		for i, v := range r {
			r[i] = up[t][i] * gelu(v)
		}
	}
	return s.mul(ctx, ly.down, nil, gate, out)
}
