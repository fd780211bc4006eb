package forward

import (
	"context"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// archModernBERT is ModernBERT's general.architecture.
const archModernBERT = "modern-bert"

// glu is a gated feed-forward activation: act(first half) · second half of
// the up projection (ggml_geglu, ggml_swiglu, ggml_reglu on one tensor).
type glu uint8

const (
	gluGELU glu = iota
	gluSiLU
	gluReLU
)

// apply writes act(x[i]) · g[i] to x.
func (op glu) apply(x, g []float32) {
	for i, v := range x {
		switch op {
		case gluGELU:
			v = gelu(v)
		case gluSiLU:
			v = silu(v)
		case gluReLU:
			v = max(v, 0)
		}
		x[i] = v * g[i]
	}
}

// parseModernBERT reads what llama_model_modern_bert::load_arch_hparams and
// the common loader read beyond the encoder's shared sizes.
func parseModernBERT(r *kvReader, c *EncoderConfig) error {
	if _, err := r.f32(r.key("attention.layer_norm_epsilon"), &c.Eps, true); err != nil {
		return err
	}
	c.KVHeads, c.HeadDim = c.Heads, c.Embd/c.Heads
	c.RopeBase, c.RopeBaseSWA = 10000, 10000
	if _, err := r.f32(r.key(gguf.SuffixRopeFreqBase), &c.RopeBase, false); err != nil {
		return err
	}
	c.SWA = make([]bool, c.Layers)
	if ok, err := r.u32(r.key(gguf.SuffixSlidingWindow), &c.SWAWindow, false); err != nil {
		return err
	} else if ok && c.SWAWindow > 0 {
		if _, err := r.f32(r.key("rope.freq_base_swa"), &c.RopeBaseSWA, false); err != nil {
			return err
		}
		if err := readSWAPatternDenseFirst(r, c, 3); err != nil {
			return err
		}
	}
	for _, b := range []float32{c.RopeBase, c.RopeBaseSWA} {
		if !(b > 0) {
			return fmt.Errorf("%w: rope base %g", ErrMetadata, b)
		}
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("%w: head size %d is odd", ErrMetadata, c.HeadDim)
	}
	var act string
	if _, err := r.str(r.key("hidden_activation"), &act, false); err != nil {
		return err
	}
	// llama.cpp's LLM_FFN_OP_TYPES_FROM_STRING; anything else is GEGLU.
	switch act {
	case "silu", "swish", "swiglu":
		c.FFNOp = gluSiLU
	case "reglu":
		c.FFNOp = gluReLU
	case "relu":
		return fmt.Errorf("%w: %s = relu (an ungated feed-forward)", ErrUnsupported, r.key("hidden_activation"))
	default:
		c.FFNOp = gluGELU
	}
	if c.ClsPooling == PoolingUnspecified {
		c.ClsPooling = PoolingMean
	}
	return nil
}

// readSWAPatternDenseFirst is load_swa_pattern(ml, n, true): a per-layer
// array wins, else every n-th layer from the first is dense.
func readSWAPatternDenseFirst(r *kvReader, c *EncoderConfig, n int) error {
	key := r.key("attention.sliding_window_pattern")
	if v, ok := r.md.KV(key); ok && v.IsArray() {
		tmp := &Config{Layers: c.Layers, SWA: c.SWA}
		return tmp.readSWAPattern(r, n)
	}
	if _, err := r.u32(key, &n, false); err != nil {
		return err
	}
	for il := range c.SWA {
		c.SWA[il] = n == 0 || il%n != 0
	}
	return nil
}

// modernBERTLayer is one pre-norm block: LayerNorm (none in the first
// block), fused QKV attention with rotary positions, LayerNorm, gated
// feed-forward; the norms have no bias.
type modernBERTLayer struct {
	attnNorm, qkv, o, ffnNorm, up, down []float32
}

// modernBERT is ModernBERT's graph (llama.cpp's src/models/modern-bert.cpp).
type modernBERT struct {
	tok, tokNorm, outNorm []float32
	layers                []modernBERTLayer
}

// loadModernBERT reads ModernBERT's weights; l keeps the first error.
func loadModernBERT(c *EncoderConfig, l *encLoader) *modernBERT {
	n := c.Embd
	m := &modernBERT{layers: make([]modernBERTLayer, c.Layers)}
	if tok, ok := l.w.Tensor("token_embd.weight"); ok && len(tok.Shape()) == 2 {
		m.tok = l.get("token_embd.weight", n, int(tok.Shape()[1]), true)
	} else {
		l.err = fmt.Errorf("%w: tensor token_embd.weight missing or not 2-D", ErrWeights)
	}
	m.tokNorm = l.get("token_embd_norm.weight", n, 1, true)
	m.outNorm = l.get("output_norm.weight", n, 1, true)
	for i := range m.layers {
		L := &m.layers[i]
		b := fmt.Sprintf("blk.%d.", i)
		L.attnNorm = l.get(b+"attn_norm.weight", n, 1, i != 0)
		L.qkv = l.get(b+"attn_qkv.weight", n, 3*n, true)
		L.o = l.get(b+"attn_output.weight", n, n, true)
		L.ffnNorm = l.get(b+"ffn_norm.weight", n, 1, true)
		L.up = l.get(b+"ffn_up.weight", n, 2*c.FF, true)
		L.down = l.get(b+"ffn_down.weight", c.FF, n, true)
	}
	return m
}

// hidden runs ModernBERT over ids (positions from 0, every token attending
// to every other, or within the window in sliding-window layers) and
// returns each token's output-normed state.
func (m *modernBERT) hidden(ctx context.Context, c *EncoderConfig, ids []int) ([][]float32, error) {
	n, hd, T := c.Embd, c.HeadDim, len(ids)
	vocab := len(m.tok) / n
	x := make([][]float32, T)
	for i, id := range ids {
		if id < 0 || id >= vocab {
			return nil, fmt.Errorf("%w: token id %d outside the %d-token embedding", ErrUnsupported, id, vocab)
		}
		x[i] = make([]float32, n)
		layerNorm(x[i], m.tok[id*n:(id+1)*n], m.tokNorm, nil, c.Eps)
	}
	rc := &Config{RopeAttnFactor: 1}
	caches := map[float32][][]float32{}
	for _, base := range []float32{c.RopeBase, c.RopeBaseSWA} {
		cs := alloc2(T, hd)
		for p := range cs {
			ropeCache(cs[p], p, hd, base, 1, nil, rc)
		}
		caches[base] = cs
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	qkv := alloc2(T, 3*n)
	attn := alloc2(T, n)
	scores := make([]float32, T)
	cur, tmp := make([]float32, n), make([]float32, n)
	up := make([]float32, 2*c.FF)
	for il := range m.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		L := &m.layers[il]
		cache := caches[c.RopeBase]
		if c.SWA[il] {
			cache = caches[c.RopeBaseSWA]
		}
		for t := 0; t < T; t++ {
			in := x[t]
			if L.attnNorm != nil {
				layerNorm(tmp, x[t], L.attnNorm, nil, c.Eps)
				in = tmp
			}
			linear(qkv[t], L.qkv, nil, in)
			for h := 0; h < 2*c.Heads; h++ { // the query's heads, then the key's
				rope(qkv[t][h*hd:(h+1)*hd], cache[t], hd, ropeNeox)
			}
		}
		half := c.SWAWindow / 2
		for t := 0; t < T; t++ {
			for h := 0; h < c.Heads; h++ {
				qh := qkv[t][h*hd : (h+1)*hd]
				for s := 0; s < T; s++ {
					if c.SWA[il] && (s-t < -half || s-t > half) {
						scores[s] = float32(math.Inf(-1))
						continue
					}
					scores[s] = dot(qh, qkv[s][n+h*hd:n+(h+1)*hd])
				}
				softmax(scores, scale)
				out := attn[t][h*hd : (h+1)*hd]
				clear(out)
				for s := 0; s < T; s++ {
					for j, vv := range qkv[s][2*n+h*hd : 2*n+(h+1)*hd] {
						out[j] += scores[s] * vv
					}
				}
			}
		}
		for t := 0; t < T; t++ {
			linear(cur, L.o, nil, attn[t])
			for j := range cur {
				cur[j] += x[t][j]
			}
			layerNorm(tmp, cur, L.ffnNorm, nil, c.Eps)
			linear(up, L.up, nil, tmp)
			c.FFNOp.apply(up[:c.FF], up[c.FF:])
			linear(x[t], L.down, nil, up[:c.FF])
			for j := range cur {
				x[t][j] += cur[j]
			}
		}
	}
	for t := range x {
		layerNorm(tmp, x[t], m.outNorm, nil, c.Eps)
		copy(x[t], tmp)
	}
	return x, nil
}
