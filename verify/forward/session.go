package forward

import (
	"context"
	"fmt"
	"github.com/ggufkit/ggufkit/quantize"
	"math"
	"slices"
)

// maxCacheBytes bounds a session's key/value cache.
const maxCacheBytes = 8 << 30

// Session runs a model over a growing sequence of tokens, keeping every
// layer's keys and values (llama.cpp's KV cache) so each Eval only computes
// the new tokens. It is not safe for concurrent use.
type Session struct {
	m        *Model
	capacity int
	n        int
	k, v     [][]float32     // per layer: capacity rows of HeadsKV·HeadDimK (·HeadDimV)
	factors  []float32       // RoPE frequency factors in use, or nil
	bufs     [][]float32     // per-worker scratch
	recr     *recurrentState // the recurrent blocks' state (ssm.go, hybrid.go)
	rwkv     *rwkvState      // the recurrent state of rwkv6 and rwkv7 (rwkv7.go)
	mm       mulScratch      // the products' unpacked rows and converted inputs (matmul.go)
}

// NewSession prepares a session for up to capacity tokens.
func (m *Model) NewSession(capacity int) (*Session, error) {
	c := m.cfg
	if c.ssm != nil || c.rwkv != nil {
		if capacity <= 0 {
			return nil, fmt.Errorf("%w: context of %d tokens", ErrUnsupported, capacity)
		}
		if c.rwkv != nil {
			return &Session{m: m, capacity: capacity, rwkv: newRWKVState(c)}, nil
		}
		return &Session{m: m, capacity: capacity, recr: newSSMState(c)}, nil
	}
	// kvWidth is a layer's key and value widths (gemma4's differ by layer).
	kvWidth := func(il int) (int, int) {
		if c.recurrent(il) && !c.arch.parallelMixer {
			return 0, 0 // a hybrid's recurrent block keeps no keys and values
		}
		return c.kvDimK(), c.kvDimV()
	}
	if c.g4 != nil {
		kvWidth = func(il int) (int, int) { w := c.g4.headsKV[il] * c.g4.headDim[il]; return w, w }
	}
	var per int64
	for il := range c.Layers {
		wk, wv := kvWidth(il)
		per += int64(wk+wv) * 4
	}
	if capacity <= 0 || int64(capacity) > maxCacheBytes/max(per, 1) {
		return nil, fmt.Errorf("%w: context of %d tokens (the cache would need more than %d bytes)", ErrUnsupported, capacity, int64(maxCacheBytes))
	}
	if m.posEmbd != nil && capacity > c.CtxTrain {
		return nil, fmt.Errorf("%w: context of %d tokens exceeds the %d learned positions", ErrUnsupported, capacity, c.CtxTrain)
	}
	s := &Session{m: m, capacity: capacity, factors: m.ropeFreqs}
	if m.ropeLong != nil || m.ropeShrt != nil {
		// llama_model::get_rope_factors: long factors beyond the original context.
		s.factors = m.ropeShrt
		if capacity > c.RopeOrigCtx {
			s.factors = m.ropeLong
		}
	}
	s.k = make([][]float32, c.Layers)
	s.v = make([][]float32, c.Layers)
	for il := range s.k {
		wk, wv := kvWidth(il)
		s.k[il] = make([]float32, capacity*wk)
		s.v[il] = make([]float32, capacity*wv)
	}
	if c.Recurrent != nil {
		s.recr = newRecurrentState(c)
	}
	return s, nil
}

// Len is the number of tokens evaluated so far.
func (s *Session) Len() int { return s.n }

// Truncate forgets every token from position n on.
func (s *Session) Truncate(n int) {
	if n >= 0 && n < s.n {
		s.n = n
		if s.recr != nil {
			s.recr.stale = true
		}
		if s.rwkv != nil {
			s.rwkv.stale = true
		}
	}
}

// scratch returns one buffer of at least n floats per worker.
func (s *Session) scratch(n int) [][]float32 {
	if len(s.bufs) < s.m.threads {
		s.bufs = make([][]float32, s.m.threads)
	}
	for i := range s.bufs {
		if cap(s.bufs[i]) < n {
			s.bufs[i] = make([]float32, n)
		}
	}
	return s.bufs
}

func rows(n, width int) [][]float32 {
	flat := make([]float32, n*width)
	out := make([][]float32, n)
	for i := range out {
		out[i] = flat[i*width : (i+1)*width : (i+1)*width]
	}
	return out
}

// Eval appends tokens at the next positions and returns the logits of every
// one of them (all) or of the last only.
func (s *Session) Eval(ctx context.Context, tokens []int, all bool) ([][]float32, error) {
	m, c := s.m, s.m.cfg
	if len(tokens) == 0 {
		return nil, nil
	}
	if len(tokens) > s.capacity-s.n {
		return nil, fmt.Errorf("forward: %d tokens do not fit: %d of %d positions used", len(tokens), s.n, s.capacity)
	}
	if s.recr != nil && s.recr.stale {
		if err := s.replay(ctx); err != nil {
			return nil, err
		}
	}
	x := rows(len(tokens), c.Embd)
	for t, id := range tokens {
		if id < 0 || id >= c.Vocab {
			return nil, fmt.Errorf("forward: token %d outside the vocabulary of %d", id, c.Vocab)
		}
		if err := m.tokEmbd.ReadRows(id, 1, x[t]); err != nil {
			return nil, fmt.Errorf("token_embd.weight row %d: %w", id, err)
		}
		if c.arch.embedScale {
			scale := float32(math.Sqrt(float64(float32(c.Embd))))
			for i := range x[t] {
				x[t][i] *= scale
			}
		}
		if c.EmbedScale != 0 {
			scaleRow(x[t], c.EmbedScale)
		}
		if m.posEmbd != nil {
			pos := make([]float32, c.Embd)
			if err := m.posEmbd.ReadRows(s.n+t, 1, pos); err != nil {
				return nil, fmt.Errorf("position_embd.weight row %d: %w", s.n+t, err)
			}
			for i := range x[t] {
				x[t][i] += pos[i]
			}
		}
	}
	switch {
	case m.g4 != nil:
		if err := s.evalGemma4(ctx, tokens, x); err != nil {
			return nil, err
		}
	case m.ssm != nil:
		if err := s.evalSSM(ctx, x); err != nil {
			return nil, err
		}
	case m.rwkv != nil || m.rwkv6 != nil:
		if err := s.evalRWKV(ctx, tokens, x); err != nil {
			return nil, err
		}
	case m.g3n != nil:
		if err := s.evalGemma3n(ctx, tokens, x); err != nil {
			return nil, err
		}
	default:
		if m.tokNorm != nil {
			for t := range x {
				s.norm(x[t], x[t], m.tokNorm, m.tokNormB)
			}
		}
		for il := range m.layers {
			if err := s.layer(ctx, il, x); err != nil {
				return nil, err
			}
		}
	}
	s.n += len(tokens)
	if s.recr != nil {
		s.recr.tokens = append(s.recr.tokens, tokens...)
	}
	if !all {
		x = x[len(x)-1:]
	}
	for _, r := range x {
		s.norm(r, r, m.outNorm, m.outNormB)
	}
	logits := rows(len(x), c.Vocab)
	if err := s.mul(ctx, m.output, m.outputB, x, logits); err != nil {
		return nil, err
	}
	if c.LogitScale != 0 {
		for _, l := range logits {
			for i := range l {
				l[i] *= c.LogitScale
			}
		}
	}
	if c.FinalSoftcap != 0 {
		for _, l := range logits {
			softcap(l, c.FinalSoftcap)
		}
	}
	return logits, nil
}

// norm applies the architecture's normalisation with weight w (and bias b);
// a nil w is the plain ggml_norm / ggml_rms_norm.
func (s *Session) norm(dst, x, w, b []float32) {
	switch {
	case s.m.cfg.arch.norm == normLayer:
		layerNorm(dst, x, w, b, s.m.cfg.NormEps)
	case w == nil:
		rmsNormPlain(dst, x, s.m.cfg.NormEps)
	default:
		rmsNorm(dst, x, w, s.m.cfg.NormEps)
		for i := range b { // build_norm adds a bias after either norm (phimoe)
			dst[i] += b[i]
		}
	}
}

// preNorm writes norm(x) with weight w and bias b to h, or x itself where
// the architecture has no pre-norms (olmo2).
func (s *Session) preNorm(h, x [][]float32, w, b []float32) {
	for t := range x {
		if s.m.cfg.arch.noPreNorm {
			copy(h[t], x[t])
		} else {
			s.norm(h[t], x[t], w, b)
		}
	}
}

// layer runs block il on x (updated in place) for the tokens at positions
// s.n, s.n+1, …
func (s *Session) layer(ctx context.Context, il int, x [][]float32) error {
	c, ly := s.m.cfg, &s.m.layers[il]
	if c.arch.soloBlocks {
		return s.soloLayer(ctx, il, x)
	}
	T := len(x)
	h := rows(T, c.Embd)
	s.preNorm(h, x, ly.attnNorm, ly.attnNormB)
	attnIn := h
	if ly.attnNorm2 != nil {
		// Falcon-40B: attention reads attn_norm_2(x) (ln_attn), the FFN
		// attn_norm(x) (ln_mlp).
		attnIn = rows(T, c.Embd)
		s.preNorm(attnIn, x, ly.attnNorm2, ly.attnNorm2B)
	}
	attn := s.selfAttention
	switch {
	case c.recurrent(il) && !c.arch.parallelMixer:
		attn = s.mixer()
	case c.arch.mla:
		attn = s.mlaAttention
	case c.arch.mlaWhole:
		attn = s.latentAttention
	}
	o, err := attn(ctx, il, ly, attnIn)
	if err != nil {
		return err
	}
	if c.arch.parallelMixer {
		m, err := s.mixer()(ctx, il, ly, attnIn)
		if err != nil {
			return err
		}
		for t := range o {
			for i, v := range m[t] {
				o[t][i] += v
			}
		}
	}
	if c.ParallelResidual || (c.arch.parallelWithoutFFNNorm && ly.ffnNorm == nil) {
		// x + ffn(ln2(x)) + attn(ln1(x)), added in the graph's order; with
		// sharedNorm (or no ffn_norm) the FFN reads ln1(x) too.
		if !c.arch.sharedNorm && ly.ffnNorm != nil {
			s.preNorm(h, x, ly.ffnNorm, ly.ffnNormB)
		}
		f := rows(T, c.Embd)
		if err := s.ffn(ctx, ly, h, f); err != nil {
			return err
		}
		for t := range x {
			for i := range x[t] {
				switch c.arch.parallelSum {
				case sumFFNInput:
					x[t][i] = (f[t][i] + x[t][i]) + o[t][i]
				case sumBranches:
					x[t][i] = (o[t][i] + f[t][i]) + x[t][i]
				case sumAttnInput:
					x[t][i] = f[t][i] + (o[t][i] + x[t][i])
				}
			}
		}
		return nil
	}
	if c.arch.residualMoE {
		return s.residualMoE(ctx, ly, x, o)
	}
	for t := range o {
		if ly.attnPost != nil {
			rmsNorm(o[t], o[t], ly.attnPost, c.NormEps)
		}
		if c.ResidualScale != 0 {
			scaleRow(o[t], c.ResidualScale)
		}
		for i := range o[t] {
			x[t][i] += o[t][i]
		}
	}
	s.preNorm(h, x, ly.ffnNorm, ly.ffnNormB)
	f := rows(T, c.Embd)
	if err := s.ffn(ctx, ly, h, f); err != nil {
		return err
	}
	for t := range f {
		if ly.ffnPost != nil {
			rmsNorm(f[t], f[t], ly.ffnPost, c.NormEps)
		}
		if c.ResidualScale != 0 {
			scaleRow(f[t], c.ResidualScale)
		}
		for i := range f[t] {
			x[t][i] += f[t][i]
		}
	}
	return nil
}

// selfAttention is the attention of a block: Q, K and V projected from h
// (with q/k norms, RoPE, Q scaling as the architecture says), appended to
// the cache, attended, and projected by attn_output.
func (s *Session) selfAttention(ctx context.Context, il int, ly *layer, h [][]float32) ([][]float32, error) {
	c := s.m.cfg
	T := len(h)
	qw := c.headsQ()
	if c.arch.gatedQ {
		qw *= 2
	}
	q, k, v := rows(T, qw), rows(T, c.kvDimK()), rows(T, c.kvDimV())
	if err := s.qkv(ctx, ly, h, q, k, v); err != nil {
		return nil, err
	}
	var gate [][]float32
	switch {
	case c.arch.gatedQ:
		q, gate = splitQueryGate(q, c.Heads, c.HeadDimK)
	case ly.attnGate != nil:
		gate = rows(T, c.headsQ())
		if err := s.mul(ctx, ly.attnGate, nil, h, gate); err != nil {
			return nil, err
		}
	}
	if !c.arch.qkNormAfterRope {
		s.qkNorm(q, ly.qNorm, c.Heads)
		s.qkNorm(k, ly.kNorm, c.HeadsKV)
	}
	noRope := c.NoRope != nil && c.NoRope[il]
	if c.rope != ropeNone && (!c.arch.ropeSWAOnly || c.SWA[il]) && !noRope {
		base, scale := c.RopeBase, c.RopeFreqScale
		rc := c
		if c.SWA[il] {
			base, scale = c.RopeBaseSWA, c.RopeFreqScaleSWA
			if c.arch.swaPlainRope {
				// olmo2's SWA layers: ext_factor 0, attn_factor 1.
				plain := *c
				plain.RopeExtFactor, plain.RopeAttnFactor = 0, 1
				rc = &plain
			}
		}
		cache := make([]float32, c.Rot)
		for t := range q {
			ropeCache(cache, s.n+t, c.Rot, base, scale, s.factors, rc)
			for hd := 0; hd < c.Heads; hd++ {
				rope(q[t][hd*c.HeadDimK:], cache, c.Rot, c.rope)
			}
			for hd := 0; hd < c.HeadsKV; hd++ {
				rope(k[t][hd*c.HeadDimK:], cache, c.Rot, c.rope)
			}
		}
	}
	if c.arch.qkNormAfterRope {
		s.qkNorm(q, ly.qNorm, c.Heads)
		s.qkNorm(k, ly.kNorm, c.HeadsKV)
	}
	if c.L2QK && !noRope {
		// Llama4TextL2Norm: ggml_rms_norm without a weight, per head.
		for _, x := range [][][]float32{q, k} {
			for t := range x {
				for off := 0; off < len(x[t]); off += c.HeadDimK {
					seg := x[t][off : off+c.HeadDimK]
					rmsNormPlain(seg, seg, c.NormEps)
				}
			}
		}
	}
	if c.TempLayers != nil && c.TempLayers[il] {
		// build_inp_attn_scale.
		for t, r := range q {
			pos := float64(s.n + t)
			sc := float32(math.Log(math.Floor((pos+float64(c.AttnTempOffset))/float64(c.AttnTempFloor))+1)*float64(c.AttnTempScale) + 1)
			for i := range r {
				r[i] *= sc
			}
		}
	}
	if c.arch.scaleQ {
		for _, r := range q {
			for i := range r {
				r[i] *= c.AttnScale
			}
		}
	}
	s.storeKV(il, k, v)
	att := rows(T, c.outDimV())
	if err := s.attention(ctx, il, q, att); err != nil {
		return nil, err
	}
	for t := range gate {
		for i, g := range gate[t] {
			att[t][i] *= sigmoid(g)
		}
	}
	o := rows(T, c.Embd)
	if err := s.mul(ctx, ly.wo, ly.bo, att, o); err != nil {
		return nil, err
	}
	return o, nil
}

// qkNorm normalises Q or K (heads heads wide) in place with weight w, if
// the model has one, by the architecture's norm: over the full width
// (olmo2), else head by head with one weight row for all heads (qwen3) or
// one per head (command-r, stablelm: w holds heads rows).
func (s *Session) qkNorm(x [][]float32, w []float32, heads int) {
	c := s.m.cfg
	if w == nil {
		return
	}
	d := c.HeadDimK
	for t := range x {
		if c.arch.qkNormFull {
			s.norm(x[t], x[t], w, nil)
			continue
		}
		for hd := range heads {
			seg := x[t][hd*d : (hd+1)*d]
			hw := w
			if len(w) == heads*d {
				hw = w[hd*d : (hd+1)*d]
			}
			s.norm(seg, seg, hw, nil)
		}
	}
}

// qkv projects h to Q, K and V through a fused or split weight
// (llm_graph_context::build_qkv).
func (s *Session) qkv(ctx context.Context, ly *layer, h, q, k, v [][]float32) error {
	if ly.wqkv == nil {
		for _, p := range []struct {
			w   *matrix
			b   []float32
			out [][]float32
		}{{ly.wq, ly.bq, q}, {ly.wk, ly.bk, k}, {ly.wv, ly.bv, v}} {
			if err := s.mul(ctx, p.w, p.b, h, p.out); err != nil {
				return err
			}
			s.clamp(p.out)
		}
		return nil
	}
	bias := ly.bqkv
	if bias == nil && ly.bq != nil && ly.bk != nil && ly.bv != nil {
		bias = append(append(append([]float32(nil), ly.bq...), ly.bk...), ly.bv...)
	}
	nq, nk := len(q[0]), len(k[0])
	fused := rows(len(h), nq+nk+len(v[0]))
	if err := s.mul(ctx, ly.wqkv, bias, h, fused); err != nil {
		return err
	}
	s.clamp(fused)
	for t, r := range fused {
		copy(q[t], r[:nq])
		copy(k[t], r[nq:nq+nk])
		copy(v[t], r[nq+nk:])
	}
	return nil
}

// clamp is build_qkv's ggml_clamp to ±ClampKQV (olmo), if set.
func (s *Session) clamp(x [][]float32) {
	lim := s.m.cfg.ClampKQV
	if lim <= 0 {
		return
	}
	for _, r := range x {
		for i, v := range r {
			r[i] = min(max(v, -lim), lim)
		}
	}
}

// ffn is llm_graph_context::build_ffn for the architecture's FFN kind, or
// build_moe_ffn for a mixture of experts.
func (s *Session) ffn(ctx context.Context, ly *layer, h, out [][]float32) error {
	c := s.m.cfg
	T := len(h)
	if ly.gateInp != nil {
		return s.moe(ctx, ly, h, out)
	}
	var act [][]float32
	switch c.arch.ffn {
	case ffnSwiGLU, ffnGeGLU:
		up, gate := rows(T, c.FF), rows(T, c.FF)
		if err := s.mul(ctx, ly.up, ly.bUp, h, up); err != nil {
			return err
		}
		if err := s.mul(ctx, ly.gate, ly.bGate, h, gate); err != nil {
			return err
		}
		fn := silu
		if c.arch.ffn == ffnGeGLU {
			fn = gelu
		}
		// Token by token over the threads (a prompt's exps are a few
		// percent of its time).
		if err := parallel(ctx, s.m.threads, T, func(_, t int) error {
			for i, g := range gate[t] {
				gate[t][i] = fn(g) * up[t][i]
			}
			return nil
		}); err != nil {
			return err
		}
		act = gate
	case ffnGELU:
		act = rows(T, c.FF)
		if err := s.mul(ctx, ly.up, ly.bUp, h, act); err != nil {
			return err
		}
		for _, r := range act {
			for i, x := range r {
				r[i] = gelu(x)
			}
		}
	case ffnReLU2:
		act = rows(T, c.FF)
		if err := s.mul(ctx, ly.up, ly.bUp, h, act); err != nil {
			return err
		}
		for _, r := range act {
			for i, x := range r {
				x = max(x, 0) // ggml_relu, then ggml_sqr
				r[i] = x * x
			}
		}
	case ffnXIELU:
		act = rows(T, c.FF)
		if err := s.mul(ctx, ly.up, ly.bUp, h, act); err != nil {
			return err
		}
		p := c.XIELU[ly.index]
		for _, r := range act {
			for i, x := range r {
				r[i] = xielu(x, p[0], p[1], p[2], p[3])
			}
		}
	case ffnSwiGLUFused:
		var err error
		if act, err = s.fusedSwiGLU(ctx, ly.up, ly.bUp, h, c.FF); err != nil {
			return err
		}
	}
	return s.mul(ctx, ly.down, ly.bDown, act, out)
}

// storeKV writes the keys and values of the tokens from position s.n on
// into layer il's cache, rounded to fp16 when the model keeps an fp16
// cache (Options.KVCacheF16).
func (s *Session) storeKV(il int, k, v [][]float32) {
	c := s.m.cfg
	for t := range k {
		kd := s.k[il][(s.n+t)*c.kvDimK():][:len(k[t])]
		vd := s.v[il][(s.n+t)*c.kvDimV():][:len(v[t])]
		copy(kd, k[t])
		copy(vd, v[t])
		if s.m.kvF16 {
			roundFP16(kd)
			roundFP16(vd)
		}
	}
}

// roundFP16 rounds every value to the nearest fp16 value.
func roundFP16(x []float32) {
	for i, v := range x {
		x[i] = quantize.FP16ToFP32(quantize.FP32ToFP16(v))
	}
}

// attention is build_attn_mha without flash attention: for each token and
// query head, soft-max over the cached keys it may see (causal, and within
// the sliding window on SWA layers) of the capped, scaled scores, then the
// weighted sum of the values. Query head h reads key/value head h/(Heads/HeadsKV).
func (s *Session) attention(ctx context.Context, il int, q, out [][]float32) error {
	c := s.m.cfg
	kqScale := c.AttnScale
	if c.arch.scaleQ {
		kqScale = 1
	}
	dk, dv, group := c.HeadDimK, c.HeadDimV, c.group()
	keys, vals := s.k[il], s.v[il]
	bufs := s.scratch(s.capacity)
	tasks := len(q) * c.Heads
	threads := s.m.threads
	if tasks*(s.n+len(q))*dk < 1<<15 {
		threads = 1 // not worth the goroutines
	}
	return parallel(ctx, threads, tasks, func(worker, task int) error {
		t, hd := task/c.Heads, task%c.Heads
		pos := s.n + t
		lo := 0
		switch {
		case c.SWA[il] && c.SlidingWindow > 0 && c.Chunked:
			lo = pos / c.SlidingWindow * c.SlidingWindow // the chunk's start
		case c.SWA[il] && c.SlidingWindow > 0:
			lo = max(0, pos-c.SlidingWindow+1)
		}
		g := hd / group
		qh := q[t][hd*dk : (hd+1)*dk]
		scores := bufs[worker][:pos+1-lo]
		for j := lo; j <= pos; j++ {
			off := j*c.kvDimK() + g*dk
			scores[j-lo] = dotF32(qh, keys[off:off+dk])
		}
		if c.AttnSoftcap != 0 {
			softcap(scores, c.AttnSoftcap)
		}
		if sinks := s.m.layers[il].sinks; sinks != nil {
			softmaxSink(scores, kqScale, sinks[hd])
		} else if s.m.alibi != nil {
			// ggml_soft_max_ext with max_bias: the mask holds -|i-j|.
			slope := s.m.alibi[hd]
			for j := lo; j <= pos; j++ {
				scores[j-lo] = scores[j-lo]*kqScale - slope*float32(pos-j)
			}
			softmax(scores, 1)
		} else {
			softmax(scores, kqScale)
		}
		o := out[t][hd*dv : (hd+1)*dv]
		clear(o)
		for j := lo; j <= pos; j++ {
			off := j*c.kvDimV() + g*dv
			axpyF32(o, scores[j-lo], vals[off:off+dv])
		}
		return nil
	})
}

// swiglu computes down(silu(gate·x) ⊙ up·x) for the rows x.
// fusedSwiGLU is LLM_FFN_SWIGLU on a fused gate and up: silu(a) · b per
// row, [a | b] = up·x (+ bias), ff wide each.
func (s *Session) fusedSwiGLU(ctx context.Context, up *matrix, bias []float32, x [][]float32, ff int) ([][]float32, error) {
	both := rows(len(x), 2*ff)
	if err := s.mul(ctx, up, bias, x, both); err != nil {
		return nil, err
	}
	act := rows(len(x), ff)
	for t, r := range both {
		for i := range act[t] {
			act[t][i] = silu(r[i]) * r[ff+i]
		}
	}
	return act, nil
}

func (s *Session) swiglu(ctx context.Context, gate, up, down *matrix, x, out [][]float32) error {
	return s.glu(ctx, silu, gate, up, down, x, out)
}

// glu computes down(act(gate·x) ⊙ up·x) for the rows x.
func (s *Session) glu(ctx context.Context, act func(float32) float32, gate, up, down *matrix, x, out [][]float32) error {
	g, u := rows(len(x), gate.rows), rows(len(x), up.rows)
	if err := s.mul(ctx, gate, nil, x, g); err != nil {
		return err
	}
	if err := s.mul(ctx, up, nil, x, u); err != nil {
		return err
	}
	for t := range g {
		for i, v := range g[t] {
			g[t][i] = act(v) * u[t][i]
		}
	}
	return s.mul(ctx, down, nil, g, out)
}

// expertOAI is expert e of gpt-oss: down(swiglu_oai(gate·x + b, up·x + b)) + b.
func (s *Session) expertOAI(ctx context.Context, ly *layer, e int, x, out [][]float32) error {
	ff := ly.gateExps[e].rows
	bias := func(b []float32, n int) []float32 {
		if b == nil {
			return nil
		}
		return b[e*n : (e+1)*n]
	}
	g, u := rows(len(x), ff), rows(len(x), ff)
	if err := s.mul(ctx, ly.gateExps[e], bias(ly.bGateExps, ff), x, g); err != nil {
		return err
	}
	if err := s.mul(ctx, ly.upExps[e], bias(ly.bUpExps, ff), x, u); err != nil {
		return err
	}
	for t := range g {
		for i, v := range g[t] {
			g[t][i] = swigluOAI(v, u[t][i])
		}
	}
	return s.mul(ctx, ly.downExps[e], bias(ly.bDownExps, len(out[0])), g, out)
}

// moe is build_moe_ffn with soft-max gating: each token's router
// probabilities, its ExpertsUsed most probable experts (renormalised where
// the architecture says so), the weighted sum of their SwiGLU outputs in
// selection order; for qwen2moe plus the shared expert scaled by
// sigmoid(gate_inp_shexp·x).
func (s *Session) moe(ctx context.Context, ly *layer, h, out [][]float32) error {
	c := s.m.cfg
	T, k := len(h), c.ExpertsUsed
	probs := rows(T, c.Experts)
	if err := s.mul(ctx, ly.gateInp, ly.bGateInp, h, probs); err != nil {
		return err
	}
	sel := make([][]int, T)
	weights := make([][]float32, T)
	llama4 := c.arch.moe.kind == moeLlama4
	for t, p := range probs {
		if c.arch.moe.kind == moeOAI {
			// SOFTMAX_WEIGHT: the top k of the logits, soft-max over them.
			sel[t] = topK(p, k)
			weights[t] = make([]float32, k)
			for j, e := range sel[t] {
				weights[t][j] = p[e]
			}
			softmax(weights[t], 1)
			continue
		}
		if c.ExpertGating == 2 {
			for i, x := range p {
				p[i] = 1 / (1 + float32(math.Exp(float64(-x))))
			}
		} else {
			softmax(p, 1)
		}
		sel[t] = topK(s.selectionScores(ly, p), k)
		weights[t] = make([]float32, k)
		var sum float64
		for j, e := range sel[t] {
			weights[t][j] = p[e]
			sum += float64(p[e])
		}
		if c.normW() {
			// ggml_sum_rows, clamped to the smallest normal fp16 value.
			d := max(float32(sum), 6.103515625e-5)
			for j := range weights[t] {
				weights[t][j] /= d
			}
		}
		if w := c.ExpertWeightsScale; w != 0 && w != 1 {
			for j := range weights[t] {
				weights[t][j] *= w
			}
		}
	}
	// results[t][j] is expert sel[t][j]'s weighted output for token t.
	results := make([][][]float32, T)
	for t := range results {
		results[t] = make([][]float32, k)
	}
	for e := 0; e < c.Experts; e++ {
		var toks, slots []int
		for t := range sel {
			for j, se := range sel[t] {
				if se == e {
					toks, slots = append(toks, t), append(slots, j)
				}
			}
		}
		if len(toks) == 0 {
			continue
		}
		x := make([][]float32, len(toks))
		for i, t := range toks {
			x[i] = h[t]
			if llama4 {
				// weight_before_ffn: the expert sees its weighted input.
				w := weights[t][slots[i]]
				x[i] = make([]float32, len(h[t]))
				for d, v := range h[t] {
					x[i][d] = v * w
				}
			}
		}
		y := rows(len(toks), c.Embd)
		var err error
		switch {
		case c.arch.moe.kind == moeOAI:
			err = s.expertOAI(ctx, ly, e, x, y)
		case ly.gateExps == nil:
			err = s.relu2(ctx, ly.upExps[e], ly.downExps[e], x, y)
		case c.arch.ffn == ffnGeGLU:
			err = s.glu(ctx, gelu, ly.gateExps[e], ly.upExps[e], ly.downExps[e], x, y)
		default:
			err = s.swiglu(ctx, ly.gateExps[e], ly.upExps[e], ly.downExps[e], x, y)
		}
		if err != nil {
			return err
		}
		for i, t := range toks {
			if !llama4 {
				w := weights[t][slots[i]]
				for d := range y[i] {
					y[i][d] *= w
				}
			}
			results[t][slots[i]] = y[i]
		}
	}
	for t := range out {
		copy(out[t], results[t][0])
		for _, r := range results[t][1:] {
			for d, v := range r {
				out[t][d] += v
			}
		}
	}
	if ly.upShared == nil {
		return nil
	}
	sh := rows(T, c.Embd)
	var err error
	switch {
	case c.arch.sharedFused:
		var act [][]float32
		if act, err = s.fusedSwiGLU(ctx, ly.upShared, nil, h, c.FFShared); err == nil {
			err = s.mul(ctx, ly.downSh, nil, act, sh)
		}
	case ly.gateShared == nil:
		err = s.relu2(ctx, ly.upShared, ly.downSh, h, sh)
	default:
		err = s.swiglu(ctx, ly.gateShared, ly.upShared, ly.downSh, h, sh)
	}
	if err != nil {
		return err
	}
	if ly.gateInpShared == nil {
		// Ungated shared experts (deepseek2, glm4moe): routed + shared.
		for t := range out {
			for d, v := range sh[t] {
				out[t][d] += v
			}
			if c.arch.moe.sharedAverage {
				scaleRow(out[t], 0.5)
			}
		}
		return nil
	}
	for t := range out {
		g := 1 / (1 + float32(math.Exp(float64(-dot(ly.gateInpShared, h[t])))))
		for d, v := range sh[t] {
			out[t][d] += v * g
		}
	}
	return nil
}

// selectionScores are build_moe_ffn's selection probabilities: the
// router's, plus the selection bias (exp_probs_b, DeepSeek-V3), with every
// expert outside the ExpertGroups' GroupsUsed best groups (a group scored
// by the sum of its two best) at -Inf.
func (s *Session) selectionScores(ly *layer, p []float32) []float32 {
	c := s.m.cfg
	if ly.expProbsB == nil && c.ExpertGroups <= 1 {
		return p
	}
	sc := slices.Clone(p)
	for i, b := range ly.expProbsB {
		sc[i] += b
	}
	if c.ExpertGroups <= 1 {
		return sc
	}
	per := c.Experts / c.ExpertGroups
	groupScore := make([]float32, c.ExpertGroups)
	for g := range groupScore {
		grp := sc[g*per : (g+1)*per]
		for _, i := range topK(grp, min(2, per)) {
			groupScore[g] += grp[i]
		}
	}
	keep := topK(groupScore, c.GroupsUsed)
	for g := range groupScore {
		if !slices.Contains(keep, g) {
			for i := g * per; i < (g+1)*per; i++ {
				sc[i] = float32(math.Inf(-1))
			}
		}
	}
	return sc
}

// topK returns the indexes of the k largest values, largest first (ties:
// the lower index first).
func topK(p []float32, k int) []int {
	idx := make([]int, 0, k)
	for range k {
		best := -1
		for i, v := range p {
			if slices.Contains(idx, i) {
				continue
			}
			if best < 0 || v > p[best] {
				best = i
			}
		}
		idx = append(idx, best)
	}
	return idx
}
