package forward

import (
	"context"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/quantize"
)

// Gemma 4's audio tower (clip.audio.projector_type gemma4a), as llama.cpp's
// mtmd library runs it (tools/mtmd/models/gemma4a.cpp, clip_graph_gemma4a):
// two stride-2 3×3 convolutions over the log-mel frames and bins, each with
// a LayerNorm over its channels and ReLU, the input projection of the
// flattened channels × bins, conformer blocks (half-step FFN, chunked local
// self-attention with a sinusoidal relative position term and soft-capped
// logits, a light convolution module, a second half-step FFN, an output
// RMS norm), the output projection, and the embedder (plain RMS norm and
// mm.a.input_projection). The linears are clamped with their stored bounds
// (Gemma4ClippableLinear).

const projGemma4A = "gemma4a"

// Fixed shapes of clip_graph_gemma4a (the attention chunking, the residual
// weight of the half-step FFNs, the norms' epsilon, the logit cap, the
// depthwise kernel), hard-coded there whatever the file's keys say.
const (
	g4aChunk   = 12          // attention_chunk_size
	g4aPast    = 12          // attention_context_left − 1: the positions a query sees, itself and the 11 before it
	g4aRPE     = g4aPast + 1 // relative positions of the sinusoidal table, 0..g4aPast
	g4aEps     = 1e-6
	g4aSoftcap = 50
	g4aKernel  = 5
	// gemma4aFrames is the log-mel frames verify feeds the tower: 2 s of
	// 10 ms hops, 50 positions after the two convolutions (five chunks,
	// the last one padded). The conformer has no position table: this is
	// also the most Features takes.
	gemma4aFrames = 200
)

// g4aLinear is a clippable linear (clamp bounds optional).
type g4aLinear struct {
	w  *matrix
	b  []float32
	cr *clampRange
}

// g4aFFN is a half-step feed-forward module: RMS norm, up, SiLU, down, RMS
// post-norm, added at half weight.
type g4aFFN struct {
	norm, post []float32
	up, down   g4aLinear
}

// g4aLayer is one conformer block.
type g4aLayer struct {
	ff1, ff2          g4aFFN
	attnPre, attnPost []float32
	q, k, v, o        g4aLinear
	qScale, kScale    []float32 // per_dim_scale (softplus applied by the converter), per_dim_k_scale
	kRel              *matrix
	convPre, convNorm []float32
	pw1, pw2          g4aLinear
	dw, dwB           []float32 // [E][g4aKernel] taps, optional bias
	out               []float32
}

// gemma4Audio is the conformer tower with its embedder.
type gemma4Audio struct {
	embd, heads, bins int
	// conv are the subsampling kernels ([out][in][3][3], rounded to fp16 as
	// ggml_conv_2d's F16 im2col makes ggml_mul_mat round them), convN their
	// LayerNorm weights, ch their output channels.
	conv, convN [2][]float32
	ch          [2]int
	inProj      g4aLinear
	layers      []g4aLayer
	outProj     g4aLinear
	softNorm    []float32
	embed       g4aLinear
	// positions is the sinusoidal table of the relative positions.
	positions [][]float32
}

// clampedMat reads a linear with its clamp bounds.
func clampedMat(l *encLoader, base string, ne0, ne1 int, required bool) g4aLinear {
	return g4aLinear{w: l.mat(base+".weight", ne0, ne1, required), cr: loadClamp(l, base)}
}

// loadGemma4Audio reads the conformer's weights; the bins it takes follow
// from its input projection's width (see docs/compat.md).
func loadGemma4Audio(c *AudioConfig, w Weights) (*gemma4Audio, error) {
	l := &encLoader{w: w}
	n := c.Embd
	g := &gemma4Audio{embd: n, heads: c.Heads}
	in := 1
	for i := range 2 {
		g.ch[i] = tensorDim(w, fmt.Sprintf("a.conv1d.%d.weight", i), 3)
		if g.ch[i] == 0 {
			return nil, fmt.Errorf("%w: tensor a.conv1d.%d.weight missing or not 4-D", ErrWeights, i)
		}
		g.conv[i] = fp16Round(l.getN(fmt.Sprintf("a.conv1d.%d.weight", i), []int{3, 3, in, g.ch[i]}, true))
		g.convN[i] = l.get(fmt.Sprintf("a.conv1d.%d.norm.weight", i), g.ch[i], 1, false)
		in = g.ch[i]
	}
	width := tensorDim(w, "a.input_projection.weight", 0)
	if width == 0 || width%g.ch[1] != 0 {
		return nil, fmt.Errorf("%w: a.input_projection.weight takes %d values, not a multiple of the %d channels of a.conv1d.1",
			ErrWeights, width, g.ch[1])
	}
	g.bins = 4 * width / g.ch[1]
	g.inProj = clampedMat(l, "a.input_projection", width, n, true)
	g.inProj.b = l.get("a.input_projection.bias", n, 1, false)
	hd := n / c.Heads
	g.positions = g4aPositions(n)
	for il := range c.Layers {
		p := fmt.Sprintf("a.blk.%d.", il)
		ffn := func(sfx string) g4aFFN {
			return g4aFFN{norm: l.get(p+"ffn_norm"+sfx+".weight", n, 1, true), post: l.get(p+"ffn_post_norm"+sfx+".weight", n, 1, false),
				up: clampedMat(l, p+"ffn_up"+sfx, n, c.FF, true), down: clampedMat(l, p+"ffn_down"+sfx, c.FF, n, true)}
		}
		L := g4aLayer{ff1: ffn(""), ff2: ffn("_1"),
			attnPre: l.get(p+"attn_pre_norm.weight", n, 1, false), attnPost: l.get(p+"attn_post_norm.weight", n, 1, false),
			q: clampedMat(l, p+"attn_q", n, n, true), k: clampedMat(l, p+"attn_k", n, n, true),
			v: clampedMat(l, p+"attn_v", n, n, true), o: clampedMat(l, p+"attn_out", n, n, true),
			qScale: l.get(p+"per_dim_scale.weight", hd, 1, false), kScale: l.get(p+"per_dim_k_scale.weight", hd, 1, false),
			kRel: l.mat(p+"attn_k_rel.weight", n, n, false),
			// llama.cpp loads the module's pre-norm from conv_norm and the
			// norm after the depthwise convolution from norm_conv (the
			// converter's tensor map has them the other way round).
			convPre: l.get(p+"conv_norm.weight", n, 1, false), convNorm: l.get(p+"norm_conv.weight", n, 1, false),
			pw1: clampedMat(l, p+"conv_pw1", n, 2*n, true), pw2: clampedMat(l, p+"conv_pw2", n, n, true),
			dw: l.getN(p+"conv_dw.weight", []int{g4aKernel, n}, true), dwB: l.get(p+"conv_dw.bias", n, 1, false),
			out: l.get(p+"ln2.weight", n, 1, false)}
		L.o.b = l.get(p+"attn_out.bias", n, 1, false)
		g.layers = append(g.layers, L)
	}
	outDim := tensorDim(w, "a.pre_encode.out.weight", 1)
	if _, ok := w.Tensor("a.pre_encode.out.weight"); ok {
		g.outProj = clampedMat(l, "a.pre_encode.out", n, outDim, true)
		g.outProj.b = l.get("a.pre_encode.out.bias", outDim, 1, false)
	} else {
		outDim = n
	}
	g.softNorm = l.get("mm.a.soft_emb_norm.weight", outDim, 1, false)
	g.embed = clampedMat(l, "mm.a.input_projection", outDim, c.ProjDim, true)
	if l.err != nil {
		return nil, l.err
	}
	return g, nil
}

// g4aPositions is clip_graph_gemma4a's pos_emb input: for the relative
// positions 0..g4aPast (row p is position p; llama.cpp's rows run from
// g4aPast down), the sines of n/2 timescales from 1 to 10⁴, then their
// cosines, in float32 as llama.cpp computes them.
func g4aPositions(n int) [][]float32 {
	half := n / 2
	inc := float32(math.Log(10000)) / float32(max(half-1, 1))
	out := alloc2(g4aRPE, n)
	for p := range g4aRPE {
		for i := range half {
			inv := float32(math.Exp(float64(-float32(i) * inc)))
			x := float64(float32(p) * inv)
			out[p][i], out[p][i+half] = float32(math.Sin(x)), float32(math.Cos(x))
		}
	}
	return out
}

// features runs the tower over a log-mel spectrogram ([bins][frames]) and
// returns one embedding per position after the convolutions.
func (g *gemma4Audio) features(ctx context.Context, mel []float32, frames, threads int) ([][]float32, error) {
	s := towerSession(threads)
	// [channels][time][freq], the input one channel.
	x := [][][]float32{alloc2(frames, g.bins)}
	for b := range g.bins {
		for f := range frames {
			x[0][f][b] = mel[b*frames+f]
		}
	}
	for i := range 2 {
		x = g.subsample(x, i)
	}
	T, F, C := len(x[0]), len(x[0][0]), len(x)
	flat := alloc2(T, F*C)
	for t := range T {
		for f := range F {
			for c := range C {
				flat[t][f*C+c] = x[c][t][f]
			}
		}
	}
	h, err := g.linear(ctx, s, g.inProj, flat)
	if err != nil {
		return nil, err
	}
	for il := range g.layers {
		if h, err = g.layer(ctx, s, &g.layers[il], h); err != nil {
			return nil, fmt.Errorf("audio block %d: %w", il, err)
		}
	}
	if g.outProj.w != nil {
		if h, err = g.linear(ctx, s, g.outProj, h); err != nil {
			return nil, err
		}
	}
	for _, row := range h {
		if g.softNorm != nil {
			rmsNorm(row, row, g.softNorm, g4aEps)
		} else {
			rmsNormPlain(row, row, g4aEps)
		}
	}
	return g.linear(ctx, s, g.embed, h)
}

// linear is a clippable linear over the rows of x.
func (g *gemma4Audio) linear(ctx context.Context, s *Session, ln g4aLinear, x [][]float32) ([][]float32, error) {
	return s.project(ctx, ln.w, ln.b, ln.cr, x)
}

// subsample is convolution i (ggml_conv_2d: 3×3, stride 2, padding 1, its
// im2col and kernel in fp16) with the LayerNorm over the channels and ReLU.
func (g *gemma4Audio) subsample(x [][][]float32, i int) [][][]float32 {
	inC, T, F := len(x), len(x[0]), len(x[0][0])
	oT, oF := (T-1)/2+1, (F-1)/2+1
	outC := g.ch[i]
	out := make([][][]float32, outC)
	for c := range out {
		out[c] = alloc2(oT, oF)
	}
	col := make([]float32, inC*9)
	px := make([]float32, outC)
	for t := range oT {
		for f := range oF {
			for c := range inC {
				for kt := range 3 {
					for kf := range 3 {
						v := float32(0)
						if tt, ff := 2*t+kt-1, 2*f+kf-1; tt >= 0 && tt < T && ff >= 0 && ff < F {
							v = quantize.FP16ToFP32(quantize.FP32ToFP16(x[c][tt][ff]))
						}
						col[(c*3+kt)*3+kf] = v
					}
				}
			}
			for o := range outC {
				px[o] = dotF32(g.conv[i][o*len(col):(o+1)*len(col)], col)
			}
			if g.convN[i] != nil {
				layerNorm(px, px, g.convN[i], nil, g4aEps)
			}
			for o := range outC {
				out[o][t][f] = max(px[o], 0)
			}
		}
	}
	return out
}

// rmsRows returns the rows of x RMS-normed with w (x itself when w is nil).
func rmsRows(x [][]float32, w []float32) [][]float32 {
	if w == nil {
		return x
	}
	out := alloc2(len(x), len(x[0]))
	for t, row := range x {
		rmsNorm(out[t], row, w, g4aEps)
	}
	return out
}

// layer runs a conformer block over the rows of x.
func (g *gemma4Audio) layer(ctx context.Context, s *Session, L *g4aLayer, x [][]float32) ([][]float32, error) {
	if err := g.ffn(ctx, s, &L.ff1, x); err != nil {
		return nil, err
	}
	a, err := g.attention(ctx, s, L, rmsRows(x, L.attnPre))
	if err != nil {
		return nil, err
	}
	addRows(x, rmsRows(a, L.attnPost))
	c, err := g.convModule(ctx, s, L, rmsRows(x, L.convPre))
	if err != nil {
		return nil, err
	}
	addRows(x, c)
	if err := g.ffn(ctx, s, &L.ff2, x); err != nil {
		return nil, err
	}
	return rmsRows(x, L.out), nil
}

// addRows adds d to x row by row.
func addRows(x, d [][]float32) {
	for t, row := range x {
		for i, v := range d[t] {
			row[i] += v
		}
	}
}

// ffn adds a half-step FFN's output to x: x + ½·post(down(SiLU(up(norm(x))))).
func (g *gemma4Audio) ffn(ctx context.Context, s *Session, f *g4aFFN, x [][]float32) error {
	h, err := g.linear(ctx, s, f.up, rmsRows(x, f.norm))
	if err != nil {
		return err
	}
	for _, row := range h {
		for i, v := range row {
			row[i] = silu(v)
		}
	}
	if h, err = g.linear(ctx, s, f.down, h); err != nil {
		return err
	}
	h = rmsRows(h, f.post)
	for t, row := range x {
		for i, v := range h[t] {
			row[i] += v * 0.5
		}
	}
	return nil
}

// attention is clip_graph_gemma4a's chunked local self-attention: each
// position attends to itself and the g4aPast−1 positions before it (the
// blocked mask of llama.cpp's chunks of g4aChunk), with the logit
// q·k + q·relK(distance) soft-capped at g4aSoftcap; queries scaled by
// 1/√d / ln 2 and per_dim_scale, keys by ln(1+e) / ln 2 (and
// per_dim_k_scale).
func (g *gemma4Audio) attention(ctx context.Context, s *Session, L *g4aLayer, h [][]float32) ([][]float32, error) {
	q, err := g.linear(ctx, s, L.q, h)
	if err != nil {
		return nil, err
	}
	k, err := g.linear(ctx, s, L.k, h)
	if err != nil {
		return nil, err
	}
	v, err := g.linear(ctx, s, L.v, h)
	if err != nil {
		return nil, err
	}
	// relK is attn_k_rel of the sinusoidal table, per relative position.
	var relK [][]float32
	if L.kRel != nil {
		if relK, err = s.project(ctx, L.kRel, nil, nil, g.positions); err != nil {
			return nil, err
		}
	}
	hd := g.embd / g.heads
	qs := float32(1/math.Sqrt(float64(hd))) / float32(math.Ln2)
	ks := float32(math.Log(1+math.E)) / float32(math.Ln2)
	scaleHeads := func(rows [][]float32, s float32, per []float32) {
		for _, row := range rows {
			for i := range row {
				row[i] *= s
				if per != nil {
					row[i] *= per[i%hd]
				}
			}
		}
	}
	scaleHeads(q, qs, L.qScale)
	scaleHeads(k, ks, L.kScale)
	T := len(h)
	out := alloc2(T, g.embd)
	scores := make([]float32, g4aPast)
	inv := float32(1) / g4aSoftcap
	for i := range T {
		lo := max(0, i-g4aPast+1)
		for hh := range g.heads {
			qh := q[i][hh*hd : (hh+1)*hd]
			sc := scores[:i-lo+1]
			for j := range sc {
				kt := lo + j
				x := dotF32(k[kt][hh*hd:(hh+1)*hd], qh)
				if relK != nil {
					x += dotF32(relK[i-kt][hh*hd:(hh+1)*hd], qh)
				}
				sc[j] = float32(math.Tanh(float64(x*inv))) * g4aSoftcap
			}
			softmax(sc, 1)
			o := out[i][hh*hd : (hh+1)*hd]
			for j, p := range sc {
				for d, vv := range v[lo+j][hh*hd : (hh+1)*hd] {
					o[d] += p * vv
				}
			}
		}
	}
	if out, err = g.linear(ctx, s, L.o, out); err != nil {
		return nil, err
	}
	return out, nil
}

// convModule is the light convolution module: pw1, GLU, the causal
// depthwise convolution (ggml_ssm_conv over g4aKernel−1 zeros and the
// positions), RMS norm, SiLU, pw2.
func (g *gemma4Audio) convModule(ctx context.Context, s *Session, L *g4aLayer, h [][]float32) ([][]float32, error) {
	y, err := g.linear(ctx, s, L.pw1, h)
	if err != nil {
		return nil, err
	}
	n, T := g.embd, len(h)
	glu := alloc2(T, n)
	for t, row := range y {
		for i := range n {
			glu[t][i] = row[i] * sigmoid(row[n+i])
		}
	}
	conv := alloc2(T, n)
	for t := range T {
		for c := range n {
			var acc float32
			for k := range g4aKernel {
				if src := t + k - (g4aKernel - 1); src >= 0 {
					acc += glu[src][c] * L.dw[c*g4aKernel+k]
				}
			}
			if L.dwB != nil {
				acc += L.dwB[c]
			}
			conv[t][c] = acc
		}
		if L.convNorm != nil {
			rmsNorm(conv[t], conv[t], L.convNorm, g4aEps)
		}
		for c, v := range conv[t] {
			conv[t][c] = silu(v)
		}
	}
	return g.linear(ctx, s, L.pw2, conv)
}
