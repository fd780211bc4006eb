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
// rebuilds the state when it is cut back.

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
	s := &ssmConfig{mamba2: r.arch == "mamba2"}
	for _, k := range []struct {
		suffix string
		dst    *int
	}{{"ssm.conv_kernel", &s.dConv}, {"ssm.inner_size", &s.dInner}, {"ssm.state_size", &s.dState}, {"ssm.time_step_rank", &s.dtRank}} {
		if _, err := r.u32(r.key(k.suffix), k.dst, true); err != nil {
			return nil, err
		}
	}
	s.nGroup = 1
	if s.mamba2 {
		if _, err := r.u32(r.key("ssm.group_count"), &s.nGroup, true); err != nil {
			return nil, err
		}
	} else if _, err := r.boolean(r.key("ssm.dt_b_c_rms"), &s.dtBCRms, false); err != nil {
		return nil, err
	}
	if err := rmsEps(c, r); err != nil {
		return nil, err
	}
	if err := c.readVocab(r); err != nil {
		return nil, err
	}
	const maxDim = 1 << 20
	for _, v := range []struct {
		name string
		n    int
	}{{"ssm.conv_kernel", s.dConv}, {"ssm.inner_size", s.dInner}, {"ssm.state_size", s.dState}, {"ssm.time_step_rank", s.dtRank}, {"ssm.group_count", s.nGroup}} {
		if v.n <= 0 || v.n > maxDim {
			return nil, fmt.Errorf("%w: %s = %d (must be 1..%d)", ErrMetadata, r.key(v.name), v.n, maxDim)
		}
	}
	switch {
	case !s.mamba2 && s.dInner != 2*c.Embd:
		// llama_model_mamba::load_arch_tensors.
		return nil, fmt.Errorf("%w: %s = %d: only an expansion factor of 2 is supported (2 × %d)", ErrMetadata, r.key("ssm.inner_size"), s.dInner, c.Embd)
	case s.mamba2 && (s.dInner%s.dtRank != 0 || s.dInner%s.nGroup != 0 || s.dtRank%s.nGroup != 0):
		// build_mamba2_layer's GGML_ASSERTs (and the scan's head-to-group map).
		return nil, fmt.Errorf("%w: %s = %d is not divisible by %s = %d and %s = %d", ErrMetadata,
			r.key("ssm.inner_size"), s.dInner, r.key("ssm.time_step_rank"), s.dtRank, r.key("ssm.group_count"), s.nGroup)
	}
	c.ssm = s
	return c, nil
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

// ssmLayer holds one Mamba block's weights.
type ssmLayer struct {
	attnNorm           []float32
	in, x, dt, out     *matrix
	conv, convB        []float32 // [convDim][dConv], [convDim]
	dtB, a, d, ssmNorm []float32
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
		ly := &m.ssm[il]
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", il, s) }
		vec(&ly.attnNorm, b("attn_norm.weight"))
		mat(&ly.in, b("ssm_in.weight"))
		mat(&ly.x, b("ssm_x.weight"))
		mat(&ly.dt, b("ssm_dt.weight"))
		mat(&ly.out, b("ssm_out.weight"))
		vec(&ly.conv, b("ssm_conv1d.weight"))
		vec(&ly.convB, b("ssm_conv1d.bias"))
		vec(&ly.dtB, b("ssm_dt.bias"))
		vec(&ly.a, b("ssm_a"))
		vec(&ly.d, b("ssm_d"))
		vec(&ly.ssmNorm, b("ssm_norm.weight"))
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ssmState is a session's recurrent state: per layer the last d_conv − 1
// convolution inputs and the scan state, plus the tokens evaluated (to
// rebuild the state after a Truncate).
type ssmState struct {
	conv, scan [][]float32
	replayLog
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

func newSSMState(c *Config) *ssmState {
	s := c.ssm
	st := &ssmState{conv: make([][]float32, c.Layers), scan: make([][]float32, c.Layers)}
	for il := range st.conv {
		st.conv[il] = make([]float32, (s.dConv-1)*s.convDim())
		st.scan[il] = make([]float32, s.dInner*s.dState)
	}
	return st
}

func (st *ssmState) reset() {
	for il := range st.conv {
		clear(st.conv[il])
		clear(st.scan[il])
	}
}

// evalSSM runs the Mamba blocks over x (the new tokens' embeddings) in
// place, after rebuilding a stale state from the kept tokens.
func (s *Session) evalSSM(ctx context.Context, tokens []int, x [][]float32) error {
	st := s.ssm
	if err := st.rebuild(ctx, s, st.reset, s.evalSSM); err != nil {
		return err
	}
	for il := range s.m.ssm {
		if err := s.ssmBlock(ctx, il, x); err != nil {
			return err
		}
	}
	st.tokens = append(st.tokens, tokens...)
	return nil
}

// ssmBlock is one block: x += out(mamba(rms_norm(x))).
func (s *Session) ssmBlock(ctx context.Context, il int, x [][]float32) error {
	c, sc := s.m.cfg, s.m.cfg.ssm
	ly := &s.m.ssm[il]
	n := len(x)
	h := rows(n, c.Embd)
	for t := range x {
		rmsNorm(h[t], x[t], ly.attnNorm, c.NormEps)
	}
	proj := rows(n, ly.in.rows)
	if err := s.mul(ctx, ly.in, nil, h, proj); err != nil {
		return err
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
	s.ssmConv(il, ly, xc)
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
			return err
		}
		r, ds := sc.dtRank, sc.dState
		low := rows(n, r)
		for t := range xdb {
			xs[t] = xc[t]
			copy(low[t], xdb[t][:r])
			bs[t] = xdb[t][r : r+ds]
			cs[t] = xdb[t][r+ds:]
			if sc.dtBCRms {
				rmsNormPlain(low[t], low[t], c.NormEps)
				rmsNormPlain(bs[t], bs[t], c.NormEps)
				rmsNormPlain(cs[t], cs[t], c.NormEps)
			}
		}
		if err := s.mul(ctx, ly.dt, ly.dtB, low, dt); err != nil {
			return err
		}
	}
	y := rows(n, di)
	s.ssmScan(il, ly, xs, dt, bs, cs, y)
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
		return err
	}
	for t := range x {
		for i := range x[t] {
			x[t][i] += out[t][i]
		}
	}
	return nil
}

// ssmConv is ggml_ssm_conv + bias + silu over the rows of xc in place:
// each channel's output is the dot product of its kernel with its last
// d_conv inputs (the conv state, then the new ones); the state keeps the
// last d_conv − 1.
func (s *Session) ssmConv(il int, ly *ssmLayer, xc [][]float32) {
	sc := s.m.cfg.ssm
	k, cd := sc.dConv, sc.convDim()
	state := s.ssm.conv[il] // [cd][k-1]
	win := make([]float32, k)
	for t := range xc {
		for ch := range cd {
			st := state[ch*(k-1) : (ch+1)*(k-1)]
			copy(win, st)
			win[k-1] = xc[t][ch]
			w := ly.conv[ch*k : (ch+1)*k]
			var sum float32
			for j := range k {
				sum += win[j] * w[j]
			}
			copy(st, win[1:])
			xc[t][ch] = silu(sum + ly.convB[ch])
		}
	}
}

// ssmScan is ggml_ssm_scan: per head, Δ = softplus(dt), and per value and
// state dimension state = state·exp(Δ·A) + B·x·Δ, y = Σ state·C, with B
// and C of the head's group.
func (s *Session) ssmScan(il int, ly *ssmLayer, xs, dt, bs, cs, y [][]float32) {
	sc := s.m.cfg.ssm
	nh, ds := sc.heads(), sc.dState
	hd := sc.dInner / nh
	state := s.ssm.scan[il] // [nh][hd][ds]
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
