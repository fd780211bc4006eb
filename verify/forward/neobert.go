package forward

import (
	"context"
	"fmt"
)

// archNeoBERT is NeoBERT's general.architecture.
const archNeoBERT = "neo-bert"

// parseNeoBERT reads what llama_model_neo_bert and the common loader read
// beyond the encoder's shared sizes: the RMS norms' epsilon, the head size
// (n_embd / n_head, rotated whole) and the rotary base.
func parseNeoBERT(r *kvReader, c *EncoderConfig) error {
	if err := parseRMSHeads(r, c); err != nil {
		return err
	}
	if c.KVHeads != c.Heads {
		// load_arch_tensors sizes attn_qkv with n_embd_gqa, the graph's
		// attn_output with n_embd: only full multi-head attention fits.
		return fmt.Errorf("%w: %d key/value heads for %d heads", ErrUnsupported, c.KVHeads, c.Heads)
	}
	c.HeadDim = c.Embd / c.Heads
	return parseWholeHeadRope(r, c)
}

// neoBERTLayer is one pre-norm block: RMS norm, fused-QKV attention with
// rotary positions, RMS norm, SwiGLU feed-forward (ffn_up holding the gate
// rows, then the value rows).
type neoBERTLayer struct {
	attnNorm, qkv, o  []float32
	ffnNorm, up, down []float32
}

// neoBERT is NeoBERT's graph (llama.cpp's src/models/neo-bert.cpp).
type neoBERT struct {
	tok, outNorm []float32
	layers       []neoBERTLayer
}

// loadNeoBERT reads NeoBERT's weights; l keeps the first error.
func loadNeoBERT(c *EncoderConfig, l *encLoader) *neoBERT {
	n := c.Embd
	m := &neoBERT{layers: make([]neoBERTLayer, c.Layers), tok: l.tokEmbd(n)}
	m.outNorm = l.get("enc.output_norm.weight", n, 1, true)
	for i := range m.layers {
		L := &m.layers[i]
		b := fmt.Sprintf("blk.%d.", i)
		L.attnNorm = l.get(b+"attn_norm.weight", n, 1, true)
		L.qkv = l.get(b+"attn_qkv.weight", n, 3*n, true)
		L.o = l.get(b+"attn_output.weight", n, n, true)
		L.ffnNorm = l.get(b+"ffn_norm.weight", n, 1, true)
		L.up = l.get(b+"ffn_up.weight", n, 2*c.FF, true)
		L.down = l.get(b+"ffn_down.weight", c.FF, n, true)
	}
	return m
}

// hidden runs NeoBERT over ids (positions from 0, every token attending to
// every other) and returns each token's output-normed state. build_qkv
// reads the fused projection as Q, K and V for all heads in turn; rotary
// positions rotate consecutive pairs (LLAMA_ROPE_TYPE_NORM).
func (m *neoBERT) hidden(ctx context.Context, c *EncoderConfig, ids []int) ([][]float32, error) {
	n, hd, T := c.Embd, c.HeadDim, len(ids)
	x, err := embedRows(m.tok, n, ids)
	if err != nil {
		return nil, err
	}
	caches := ropeCaches(T, hd, c.RopeBase)
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
		for t := 0; t < T; t++ {
			rmsNorm(tmp, x[t], L.attnNorm, c.Eps)
			linear(qkv[t], L.qkv, nil, tmp)
			for h := 0; h < 2*c.Heads; h++ {
				// The query heads, then the key heads.
				rope(qkv[t][h*hd:(h+1)*hd], caches[t], hd, ropeNorm)
			}
		}
		part := func(off int) func(t, h int) []float32 {
			return func(t, h int) []float32 { return qkv[t][off+h*hd : off+(h+1)*hd] }
		}
		attendAll(T, c.Heads, 1, hd, part(0), part(n), part(2*n), attn, scores)
		for t := 0; t < T; t++ {
			linear(cur, L.o, nil, attn[t])
			for j := range cur {
				cur[j] += x[t][j]
			}
			rmsNorm(tmp, cur, L.ffnNorm, c.Eps)
			linear(up, L.up, nil, tmp)
			for j := range c.FF {
				up[j] = silu(up[j]) * up[c.FF+j]
			}
			linear(x[t], L.down, nil, up[:c.FF])
			for j := range cur {
				x[t][j] += cur[j]
			}
		}
	}
	for t := range x {
		rmsNorm(tmp, x[t], m.outNorm, c.Eps)
		copy(x[t], tmp)
	}
	return x, nil
}
