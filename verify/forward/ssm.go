package forward

import (
	"context"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// Mamba and Mamba-2 (src/models/mamba.cpp, mamba-base.cpp): each block
// RMS-normalises its input, projects it into the SSM's input and gate,
// runs a causal depthwise convolution over the last d_conv inputs (the
// conv state) and the selective scan (the SSM state, one per channel and
// state dimension: state·exp(Δ·A) + B·x·Δ, read out through C), adds D·x,
// gates with silu(z), and (Mamba-2) RMS-normalises the result per group
// before the output projection and the residual add. The recurrent state
// replaces the attention cache: a Session keeps the tokens it has seen and
// rebuilds the state when it is cut back (hybrid.go's recurrentState).

// ssmConfig holds the state-space hyperparameters (llama_hparams' ssm_*).
type ssmConfig struct {
	mamba2                        bool
	dConv, dInner, dState, dtRank int
	nGroup                        int
	// dtBCRms RMS-normalises Δ, B and C without weights (Falcon-Mamba's
	// ssm_dt_b_c_rms).
	dtBCRms bool
}

// heads is the scan's head count: d_inner channels of one value each for
// Mamba, dt_rank heads of d_inner / dt_rank values for Mamba-2.
func (s *ssmConfig) heads() int {
	if s.mamba2 {
		return s.dtRank
	}
	return s.dInner
}

// convDim is the width of the convolution (x, and for Mamba-2 B and C).
func (s *ssmConfig) convDim() int {
	if s.mamba2 {
		return s.dInner + 2*s.nGroup*s.dState
	}
	return s.dInner
}

// parseSSM mirrors llama_model_mamba(2)::load_arch_hparams and the checks
// of their load_arch_tensors and graphs.
func parseSSM(r *kvReader) (*Config, error) {
	c := &Config{Arch: r.arch, arch: &archInfo{norm: normRMS}}
	for _, k := range []struct {
		suffix string
		dst    *int
	}{{gguf.SuffixContextLength, &c.CtxTrain}, {gguf.SuffixEmbeddingLength, &c.Embd}, {gguf.SuffixBlockCount, &c.Layers}} {
		if _, err := r.u32(r.key(k.suffix), k.dst, true); err != nil {
			return nil, err
		}
	}
	if c.Layers <= 0 || c.Layers > maxLayers {
		return nil, fmt.Errorf("%w: %s = %d (must be 1..%d)", ErrMetadata, r.key(gguf.SuffixBlockCount), c.Layers, maxLayers)
	}
	s, err := readSSMSizes(r, r.arch == "mamba2")
	if err != nil {
		return nil, err
	}
	if !s.mamba2 {
		if _, err := r.boolean(r.key("ssm.dt_b_c_rms"), &s.dtBCRms, false); err != nil {
			return nil, err
		}
	}
	if err := rmsEps(c, r); err != nil {
		return nil, err
	}
	if err := c.readVocab(r); err != nil {
		return nil, err
	}
	if !s.mamba2 && s.dInner != 2*c.Embd {
		// llama_model_mamba::load_arch_tensors.
		return nil, fmt.Errorf("%w: %s = %d: only an expansion factor of 2 is supported (2 × %d)", ErrMetadata, r.key("ssm.inner_size"), s.dInner, c.Embd)
	}
	c.ssm = s
	return c, nil
}

// readSSMSizes reads the ssm.* sizes (the group count for Mamba-2 only,
// else 1) and checks them: each 1..2²⁰, and for Mamba-2 build_mamba2_layer's
// GGML_ASSERTs (and the scan's head-to-group map).
func readSSMSizes(r *kvReader, mamba2 bool) (*ssmConfig, error) {
	s := &ssmConfig{mamba2: mamba2, nGroup: 1}
	keys := []struct {
		suffix string
		dst    *int
	}{{"ssm.conv_kernel", &s.dConv}, {"ssm.inner_size", &s.dInner}, {"ssm.state_size", &s.dState}, {"ssm.time_step_rank", &s.dtRank}}
	if mamba2 {
		keys = append(keys, struct {
			suffix string
			dst    *int
		}{"ssm.group_count", &s.nGroup})
	}
	const maxDim = 1 << 20
	for _, k := range keys {
		if _, err := r.u32(r.key(k.suffix), k.dst, true); err != nil {
			return nil, err
		}
		if *k.dst <= 0 || *k.dst > maxDim {
			return nil, fmt.Errorf("%w: %s = %d (must be 1..%d)", ErrMetadata, r.key(k.suffix), *k.dst, maxDim)
		}
	}
	if mamba2 && (s.dInner%s.dtRank != 0 || s.dInner%s.nGroup != 0 || s.dtRank%s.nGroup != 0) {
		return nil, fmt.Errorf("%w: %s = %d is not divisible by %s = %d and %s = %d", ErrMetadata,
			r.key("ssm.inner_size"), s.dInner, r.key("ssm.time_step_rank"), s.dtRank, r.key("ssm.group_count"), s.nGroup)
	}
	return s, nil
}

// ssmTensors is load_arch_tensors of mamba and mamba2.
func (c *Config) ssmTensors() []TensorSpec {
	s := c.ssm
	e, v := int64(c.Embd), int64(c.Vocab)
	di, ds, dc, dr := int64(s.dInner), int64(s.dState), int64(s.dConv), int64(s.dtRank)
	cd := int64(s.convDim())
	out := []TensorSpec{
		{Name: "token_embd.weight", Shape: []int64{e, v}},
		{Name: "output_norm.weight", Shape: []int64{e}},
		{Name: "output.weight", Shape: []int64{e, v}, Optional: true},
	}
	for il := range c.Layers {
		b := func(n string, shape ...int64) {
			out = append(out, TensorSpec{Name: fmt.Sprintf("blk.%d.%s", il, n), Shape: shape})
		}
		b("attn_norm.weight", e)
		if s.mamba2 {
			b("ssm_in.weight", e, di+cd+dr)
		} else {
			b("ssm_in.weight", e, 2*di)
		}
		b("ssm_conv1d.weight", dc, cd)
		b("ssm_conv1d.bias", cd)
		if s.mamba2 {
			b("ssm_dt.bias", dr)
			b("ssm_a", 1, dr)
			b("ssm_d", 1, dr)
			b("ssm_norm.weight", di/int64(s.nGroup), int64(s.nGroup))
		} else {
			b("ssm_x.weight", di, dr+2*ds)
			b("ssm_dt.weight", dr, di)
			b("ssm_dt.bias", di)
			b("ssm_a", ds, di)
			b("ssm_d", di)
		}
		b("ssm_out.weight", di, e)
	}
	return out
}

// ssmLayer holds one recurrent block's weights: a Mamba or Mamba-2 block,
// a gated delta net (in is attn_qkv) or a short convolution (in and out
// are shortconv.in_proj and out_proj, conv its kernel).
type ssmLayer struct {
	attnNorm       []float32
	in, x, dt, out *matrix
	// The delta net's z, β and α projections (or qwen3next's joint ba).
	gateZ, beta, alpha, ba *matrix
	conv, convB            []float32 // [convDim][dConv], [convDim]
	dtB, a, d, ssmNorm     []float32
	// Jamba's norms of Δ, B and C.
	dtNorm, bNorm, cNorm []float32
	// Kimi Delta Attention's low-rank decay and output gate projections.
	fA, fB, gA, gB *matrix
}

// loadSSM reads a Mamba model's tensors (shapes checked by l).
func loadSSM(cfg *Config, w Weights, threads int) (*Model, error) {
	l := newSpecLoader(w, cfg.ssmTensors())
	m := &Model{cfg: cfg, threads: threads}
	var err error
	vec := func(dst *[]float32, name string) {
		if err == nil {
			*dst, err = l.vec(name)
		}
	}
	mat := func(dst **matrix, name string) {
		if err == nil {
			*dst, err = l.mat(name)
		}
	}
	if err == nil {
		m.tokEmbd, err = l.tensor("token_embd.weight")
	}
	vec(&m.outNorm, "output_norm.weight")
	mat(&m.output, "output.weight")
	if err != nil {
		return nil, err
	}
	if m.output == nil {
		s := m.tokEmbd.Shape()
		m.output = &matrix{name: "token_embd.weight", t: m.tokEmbd, cols: int(s[0]), rows: int(s[1])}
	}
	m.ssm = make([]ssmLayer, cfg.Layers)
	for il := range m.ssm {
		if err := l.recurrentLayer(il, &m.ssm[il]); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// replayLog is the part of a recurrent state that lets a session rebuild
// it after a Truncate: the tokens evaluated, and whether the state belongs
// to a longer sequence than the session's.
type replayLog struct {
	tokens []int
	stale  bool
}

// rebuild, when the state is stale, calls reset and re-evaluates the kept
// tokens (the first n) from their embeddings through eval.
func (r *replayLog) rebuild(ctx context.Context, s *Session, reset func(), eval func(context.Context, []int, [][]float32) error) error {
	if !r.stale {
		return nil
	}
	reset()
	kept := r.tokens[:s.n]
	r.tokens, r.stale = nil, false
	if len(kept) == 0 {
		return nil
	}
	h := rows(len(kept), s.m.cfg.Embd)
	for t, id := range kept {
		if err := s.m.tokEmbd.ReadRows(id, 1, h[t]); err != nil {
			return fmt.Errorf("token_embd.weight row %d: %w", id, err)
		}
	}
	return eval(ctx, kept, h)
}

// recurrentLayer reads block il's recurrent weights into ly: those of the
// architecture's tensor table (the loader skips the others).
func (l *loader) recurrentLayer(il int, ly *ssmLayer) error {
	var err error
	b := func(s string) string { return fmt.Sprintf("blk.%d.%s", il, s) }
	for _, v := range []struct {
		dst  *[]float32
		name string
	}{{&ly.attnNorm, "attn_norm.weight"}, {&ly.conv, "ssm_conv1d.weight"}, {&ly.convB, "ssm_conv1d.bias"},
		{&ly.dtB, "ssm_dt.bias"}, {&ly.a, "ssm_a"}, {&ly.d, "ssm_d"}, {&ly.ssmNorm, "ssm_norm.weight"},
		{&ly.dtNorm, "ssm_dt_norm.weight"}, {&ly.bNorm, "ssm_b_norm.weight"}, {&ly.cNorm, "ssm_c_norm.weight"},
		{&ly.conv, "shortconv.conv.weight"}} {
		if *v.dst == nil && err == nil {
			*v.dst, err = l.vec(b(v.name))
		}
	}
	for _, m := range []struct {
		dst  **matrix
		name string
	}{{&ly.in, "ssm_in.weight"}, {&ly.x, "ssm_x.weight"}, {&ly.dt, "ssm_dt.weight"}, {&ly.out, "ssm_out.weight"},
		{&ly.in, "attn_qkv.weight"}, {&ly.gateZ, "attn_gate.weight"}, {&ly.beta, "ssm_beta.weight"},
		{&ly.alpha, "ssm_alpha.weight"}, {&ly.ba, "ssm_ba.weight"},
		{&ly.in, "shortconv.in_proj.weight"}, {&ly.out, "shortconv.out_proj.weight"},
		{&ly.fA, "ssm_f_a.weight"}, {&ly.fB, "ssm_f_b.weight"}, {&ly.gA, "ssm_g_a.weight"}, {&ly.gB, "ssm_g_b.weight"}} {
		if *m.dst == nil && err == nil {
			*m.dst, err = l.mat(b(m.name))
		}
	}
	// Kimi's separate Q, K and V convolutions, run as one of their
	// concatenated channels.
	for _, n := range []string{"ssm_conv1d_q.weight", "ssm_conv1d_k.weight", "ssm_conv1d_v.weight"} {
		var k []float32
		if err == nil {
			k, err = l.vec(b(n))
		}
		ly.conv = append(ly.conv, k...)
	}
	return err
}

// newSSMState is a Mamba session's recurrent state: per layer the last
// d_conv − 1 convolution inputs and the scan state.
func newSSMState(c *Config) *recurrentState {
	s := c.ssm
	st := &recurrentState{conv: make([][]float32, c.Layers), scan: make([][]float32, c.Layers)}
	for il := range st.conv {
		st.conv[il] = make([]float32, (s.dConv-1)*s.convDim())
		st.scan[il] = make([]float32, s.dInner*s.dState)
	}
	return st
}

// evalSSM runs the Mamba blocks over x (the new tokens' embeddings) in
// place.
func (s *Session) evalSSM(ctx context.Context, x [][]float32) error {
	for il := range s.m.ssm {
		if err := s.ssmBlock(ctx, il, x); err != nil {
			return err
		}
	}
	return nil
}

// ssmBlock is one block: x += out(mamba(rms_norm(x))).
func (s *Session) ssmBlock(ctx context.Context, il int, x [][]float32) error {
	c := s.m.cfg
	ly := &s.m.ssm[il]
	h := rows(len(x), c.Embd)
	for t := range x {
		rmsNorm(h[t], x[t], ly.attnNorm, c.NormEps)
	}
	out, err := s.mamba(ctx, c.ssm, ly, s.recr.conv[il], s.recr.scan[il], h)
	if err != nil {
		return err
	}
	for t := range x {
		for i := range x[t] {
			x[t][i] += out[t][i]
		}
	}
	return nil
}

// mamba is a Mamba or Mamba-2 mixer (build_mamba_layer,
// build_mamba2_layer) on h (already normalised), with its conv and scan
// states; it returns the output projection.
func (s *Session) mamba(ctx context.Context, sc *ssmConfig, ly *ssmLayer, conv, scan []float32, h [][]float32) ([][]float32, error) {
	c := s.m.cfg
	n := len(h)
	proj := rows(n, ly.in.rows)
	if err := s.mul(ctx, ly.in, nil, h, proj); err != nil {
		return nil, err
	}
	di, cd, nh := sc.dInner, sc.convDim(), sc.heads()
	// The projection is z | x (Mamba) or z | xBC | dt (Mamba-2).
	z := make([][]float32, n)
	xc := rows(n, cd)
	for t := range proj {
		if sc.mamba2 {
			z[t] = proj[t][:di]
			copy(xc[t], proj[t][di:di+cd])
		} else {
			copy(xc[t], proj[t][:di])
			z[t] = proj[t][di : 2*di]
		}
	}
	causalConv(conv, ly.conv, sc.dConv, xc)
	for t := range xc {
		for ch, v := range xc[t] {
			if ly.convB != nil {
				v += ly.convB[ch]
			}
			xc[t][ch] = silu(v)
		}
	}
	xs := make([][]float32, n)
	bs := make([][]float32, n)
	cs := make([][]float32, n)
	dt := rows(n, nh)
	if sc.mamba2 {
		for t := range xc {
			xs[t] = xc[t][:di]
			bs[t] = xc[t][di : di+sc.nGroup*sc.dState]
			cs[t] = xc[t][di+sc.nGroup*sc.dState:]
			copy(dt[t], proj[t][di+cd:])
			for i := range dt[t] {
				dt[t][i] += ly.dtB[i]
			}
		}
	} else {
		xdb := rows(n, ly.x.rows)
		if err := s.mul(ctx, ly.x, nil, xc, xdb); err != nil {
			return nil, err
		}
		r, ds := sc.dtRank, sc.dState
		low := rows(n, r)
		for t := range xdb {
			xs[t] = xc[t]
			copy(low[t], xdb[t][:r])
			bs[t] = xdb[t][r : r+ds]
			cs[t] = xdb[t][r+ds:]
			switch {
			case ly.dtNorm != nil:
				// Jamba's weighted norms of Δ, B and C.
				rmsNorm(low[t], low[t], ly.dtNorm, c.NormEps)
				rmsNorm(bs[t], bs[t], ly.bNorm, c.NormEps)
				rmsNorm(cs[t], cs[t], ly.cNorm, c.NormEps)
			case sc.dtBCRms:
				rmsNormPlain(low[t], low[t], c.NormEps)
				rmsNormPlain(bs[t], bs[t], c.NormEps)
				rmsNormPlain(cs[t], cs[t], c.NormEps)
			}
		}
		if err := s.mul(ctx, ly.dt, ly.dtB, low, dt); err != nil {
			return nil, err
		}
	}
	y := rows(n, di)
	ssmScan(sc, ly, scan, xs, dt, bs, cs, y)
	hd := di / nh
	for t := range y {
		for i := range y[t] {
			y[t][i] += xs[t][i] * ly.d[i/hd]
			y[t][i] *= silu(z[t][i])
		}
		if ly.ssmNorm != nil {
			g := di / sc.nGroup
			for k := 0; k < di; k += g {
				rmsNorm(y[t][k:k+g], y[t][k:k+g], ly.ssmNorm[k:k+g], c.NormEps)
			}
		}
	}
	out := rows(n, c.Embd)
	if err := s.mul(ctx, ly.out, nil, y, out); err != nil {
		return nil, err
	}
	return out, nil
}

// causalConv is ggml_ssm_conv over the rows of xc in place: each channel's
// output is the dot product of its kernel (k taps, oldest first) with its
// last k inputs (the state, then the new one); state ([channel][k−1])
// keeps the last k − 1.
func causalConv(state, kernel []float32, k int, xc [][]float32) {
	win := make([]float32, k)
	for t := range xc {
		for ch := range xc[t] {
			st := state[ch*(k-1) : (ch+1)*(k-1)]
			copy(win, st)
			win[k-1] = xc[t][ch]
			w := kernel[ch*k : (ch+1)*k]
			var sum float32
			for j := range k {
				sum += win[j] * w[j]
			}
			copy(st, win[1:])
			xc[t][ch] = sum
		}
	}
}

// ssmScan is ggml_ssm_scan: per head, Δ = softplus(dt), and per value and
// state dimension state = state·exp(Δ·A) + B·x·Δ, y = Σ state·C, with B
// and C of the head's group.
func ssmScan(sc *ssmConfig, ly *ssmLayer, state []float32, xs, dt, bs, cs, y [][]float32) {
	nh, ds := sc.heads(), sc.dState
	hd := sc.dInner / nh
	// state is [nh][hd][ds].
	for t := range xs {
		for h := range nh {
			delta := softplus(dt[t][h])
			g := h / (nh / sc.nGroup)
			b := bs[t][g*ds : (g+1)*ds]
			cv := cs[t][g*ds : (g+1)*ds]
			var dA float32
			if sc.mamba2 {
				dA = float32(math.Exp(float64(delta * ly.a[h])))
			}
			for i := range hd {
				ii := h*hd + i
				xdt := xs[t][ii] * delta
				st := state[ii*ds : (ii+1)*ds]
				var sum float32
				for j := range ds {
					decay := dA
					if !sc.mamba2 {
						decay = float32(math.Exp(float64(delta * ly.a[ii*ds+j])))
					}
					st[j] = st[j]*decay + b[j]*xdt
					sum += st[j] * cv[j]
				}
				y[t][ii] = sum
			}
		}
	}
}

// ssmArch reports whether an architecture is run by this file.
func ssmArch(arch string) bool { return arch == "mamba" || arch == "mamba2" }
