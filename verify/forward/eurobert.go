package forward

import (
	"context"
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

// archEuroBERT is EuroBERT's general.architecture.
const archEuroBERT = "eurobert"

// parseEuroBERT reads what llama.cpp's llama_model_eurobert and the common
// loader read beyond the encoder's shared sizes: the RMS norms' epsilon,
// the key/value heads, the head size and the rotary base.
func parseEuroBERT(r *kvReader, c *EncoderConfig) error {
	if err := parseRMSHeads(r, c); err != nil {
		return err
	}
	c.HeadDim = c.Embd / c.Heads
	if _, err := r.u32(r.key(gguf.SuffixKeyLength), &c.HeadDim, false); err != nil {
		return err
	}
	if c.KVHeads <= 0 || c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("%w: %d heads are not a multiple of %d key/value heads", ErrMetadata, c.Heads, c.KVHeads)
	}
	if c.HeadDim <= 0 || c.HeadDim%2 != 0 || c.HeadDim*c.Heads > maxDim {
		return fmt.Errorf("%w: head size %d", ErrMetadata, c.HeadDim)
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

// euroBERTLayer is one pre-norm block: RMS norm, attention with rotary
// positions, RMS norm, SwiGLU feed-forward.
type euroBERTLayer struct {
	attnNorm, q, k, v, o    []float32
	ffnNorm, gate, up, down []float32
}

// euroBERT is EuroBERT's graph (llama.cpp's src/models/eurobert.cpp): a
// Llama block without the causal mask, and a final RMS norm.
type euroBERT struct {
	tok, outNorm []float32
	layers       []euroBERTLayer
}

// loadEuroBERT reads EuroBERT's weights; l keeps the first error.
func loadEuroBERT(c *EncoderConfig, l *encLoader) *euroBERT {
	n, q, kv := c.Embd, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	m := &euroBERT{layers: make([]euroBERTLayer, c.Layers), tok: l.tokEmbd(n)}
	m.outNorm = l.get("output_norm.weight", n, 1, true)
	for i := range m.layers {
		L := &m.layers[i]
		b := fmt.Sprintf("blk.%d.", i)
		L.attnNorm = l.get(b+"attn_norm.weight", n, 1, true)
		L.q = l.get(b+"attn_q.weight", n, q, true)
		L.k = l.get(b+"attn_k.weight", n, kv, true)
		L.v = l.get(b+"attn_v.weight", n, kv, true)
		L.o = l.get(b+"attn_output.weight", q, n, true)
		L.ffnNorm = l.get(b+"ffn_norm.weight", n, 1, true)
		L.gate = l.get(b+"ffn_gate.weight", n, c.FF, true)
		L.up = l.get(b+"ffn_up.weight", n, c.FF, true)
		L.down = l.get(b+"ffn_down.weight", c.FF, n, true)
	}
	return m
}

// hidden runs EuroBERT over ids (positions from 0, every token attending
// to every other) and returns each token's output-normed state.
func (m *euroBERT) hidden(ctx context.Context, c *EncoderConfig, ids []int) ([][]float32, error) {
	n, hd, T := c.Embd, c.HeadDim, len(ids)
	x, err := embedRows(m.tok, n, ids)
	if err != nil {
		return nil, err
	}
	caches := ropeCaches(T, hd, c.RopeBase)
	q, k, v := alloc2(T, c.Heads*hd), alloc2(T, c.KVHeads*hd), alloc2(T, c.KVHeads*hd)
	attn := alloc2(T, c.Heads*hd)
	scores := make([]float32, T)
	cur, tmp := make([]float32, n), make([]float32, n)
	gate, up := make([]float32, c.FF), make([]float32, c.FF)
	for il := range m.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		L := &m.layers[il]
		for t := 0; t < T; t++ {
			rmsNorm(tmp, x[t], L.attnNorm, c.Eps)
			linear(q[t], L.q, nil, tmp)
			linear(k[t], L.k, nil, tmp)
			linear(v[t], L.v, nil, tmp)
			for h := 0; h < c.Heads; h++ {
				rope(q[t][h*hd:(h+1)*hd], caches[t], hd, ropeNeox)
			}
			for h := 0; h < c.KVHeads; h++ {
				rope(k[t][h*hd:(h+1)*hd], caches[t], hd, ropeNeox)
			}
		}
		head := func(m [][]float32) func(t, h int) []float32 {
			return func(t, h int) []float32 { return m[t][h*hd : (h+1)*hd] }
		}
		attendAll(T, c.Heads, c.Heads/c.KVHeads, hd, head(q), head(k), head(v), attn, scores)
		for t := 0; t < T; t++ {
			linear(cur, L.o, nil, attn[t])
			for j := range cur {
				cur[j] += x[t][j]
			}
			rmsNorm(tmp, cur, L.ffnNorm, c.Eps)
			linear(gate, L.gate, nil, tmp)
			linear(up, L.up, nil, tmp)
			for j := range up {
				up[j] *= silu(gate[j])
			}
			linear(x[t], L.down, nil, up)
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
