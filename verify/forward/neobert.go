package forward

import (
	"context"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// archNeoBERT is NeoBERT's general.architecture.
const archNeoBERT = "neo-bert"

// parseNeoBERT reads what llama_model_neo_bert and the common loader read
// beyond the encoder's shared sizes: the RMS norms' epsilon, the head size
// (n_embd / n_head, rotated whole) and the rotary base.
func parseNeoBERT(r *kvReader, c *EncoderConfig) error {
	if _, err := r.f32(r.key(gguf.SuffixLayerNormRMSEps), &c.Eps, true); err != nil {
		return err
	}
	c.KVHeads = c.Heads
	if _, err := r.u32(r.key(gguf.SuffixHeadCountKV), &c.KVHeads, false); err != nil {
		return err
	}
	if c.KVHeads != c.Heads {
		// load_arch_tensors sizes attn_qkv with n_embd_gqa, the graph's
		// attn_output with n_embd: only full multi-head attention fits.
		return fmt.Errorf("%w: %d key/value heads for %d heads", ErrUnsupported, c.KVHeads, c.Heads)
	}
	c.HeadDim = c.Embd / c.Heads
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("%w: head size %d is odd", ErrMetadata, c.HeadDim)
	}
	rot := c.HeadDim
	if _, err := r.u32(r.key(gguf.SuffixRopeDimensionCount), &rot, false); err != nil {
		return err
	}
	if rot != c.HeadDim {
		return fmt.Errorf("%w: %s = %d rotates part of a %d-value head", ErrUnsupported,
			r.key(gguf.SuffixRopeDimensionCount), rot, c.HeadDim)
	}
	c.RopeBase = 10000
	if _, err := r.f32(r.key(gguf.SuffixRopeFreqBase), &c.RopeBase, false); err != nil {
		return err
	}
	if !(c.RopeBase > 0) {
		return fmt.Errorf("%w: %s = %g", ErrMetadata, r.key(gguf.SuffixRopeFreqBase), c.RopeBase)
	}
	return nil
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
	m := &neoBERT{layers: make([]neoBERTLayer, c.Layers)}
	if tok, ok := l.w.Tensor("token_embd.weight"); ok && len(tok.Shape()) == 2 {
		m.tok = l.get("token_embd.weight", n, int(tok.Shape()[1]), true)
	} else {
		l.err = fmt.Errorf("%w: tensor token_embd.weight missing or not 2-D", ErrWeights)
	}
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
	vocab := len(m.tok) / n
	x := make([][]float32, T)
	for i, id := range ids {
		if id < 0 || id >= vocab {
			return nil, fmt.Errorf("%w: token id %d outside the %d-token embedding", ErrUnsupported, id, vocab)
		}
		x[i] = append([]float32(nil), m.tok[id*n:(id+1)*n]...)
	}
	rc := &Config{RopeAttnFactor: 1}
	caches := alloc2(T, hd)
	for p := range caches {
		ropeCache(caches[p], p, hd, c.RopeBase, 1, nil, rc)
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
		for t := 0; t < T; t++ {
			rmsNorm(tmp, x[t], L.attnNorm, c.Eps)
			linear(qkv[t], L.qkv, nil, tmp)
			for h := 0; h < 2*c.Heads; h++ {
				// The query heads, then the key heads.
				rope(qkv[t][h*hd:(h+1)*hd], caches[t], hd, ropeNorm)
			}
		}
		for t := 0; t < T; t++ {
			for h := 0; h < c.Heads; h++ {
				qh := qkv[t][h*hd : (h+1)*hd]
				for s := 0; s < T; s++ {
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
