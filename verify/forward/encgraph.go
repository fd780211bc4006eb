package forward

import (
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// The pieces the pre-norm encoder graphs (EuroBERT's, NeoBERT's) share.

// tokEmbd reads token_embd.weight, n values per row, whatever its row
// count (the vocabulary).
func (l *encLoader) tokEmbd(n int) []float32 {
	if tok, ok := l.w.Tensor("token_embd.weight"); ok && len(tok.Shape()) == 2 {
		return l.get("token_embd.weight", n, int(tok.Shape()[1]), true)
	}
	if l.err == nil {
		l.err = fmt.Errorf("%w: tensor token_embd.weight missing or not 2-D", ErrWeights)
	}
	return nil
}

// embedRows copies each id's row of the n-wide embedding tok.
func embedRows(tok []float32, n int, ids []int) ([][]float32, error) {
	vocab := len(tok) / n
	x := make([][]float32, len(ids))
	for i, id := range ids {
		if id < 0 || id >= vocab {
			return nil, fmt.Errorf("%w: token id %d outside the %d-token embedding", ErrUnsupported, id, vocab)
		}
		x[i] = append([]float32(nil), tok[id*n:(id+1)*n]...)
	}
	return x, nil
}

// ropeCaches are the rotary sin/cos caches of positions 0 to T−1 over hd
// dimensions with base (no scaling).
func ropeCaches(T, hd int, base float32) [][]float32 {
	rc := &Config{RopeAttnFactor: 1}
	caches := alloc2(T, hd)
	for p := range caches {
		ropeCache(caches[p], p, hd, base, 1, nil, rc)
	}
	return caches
}

// attendAll is bidirectional multi-head attention of T tokens: head h of
// token t attends with q(t, h) over every token's k(s, h/group) and
// averages their v(s, h/group) into out[t]'s head h, soft-max scaled by
// 1/sqrt(hd). scores holds T values.
func attendAll(T, heads, group, hd int, q, k, v func(t, h int) []float32, out [][]float32, scores []float32) {
	scale := float32(1 / math.Sqrt(float64(hd)))
	for t := 0; t < T; t++ {
		for h := 0; h < heads; h++ {
			kh := h / group
			qh := q(t, h)
			for s := 0; s < T; s++ {
				scores[s] = dot(qh, k(s, kh))
			}
			softmax(scores, scale)
			o := out[t][h*hd : (h+1)*hd]
			clear(o)
			for s := 0; s < T; s++ {
				for j, vv := range v(s, kh) {
					o[j] += scores[s] * vv
				}
			}
		}
	}
}

// parseWholeHeadRope reads a rotary encoder's rotation width, which must
// be the whole head c.HeadDim (an even size), and its base (default
// 10000): Nomic BERT's and NeoBERT's.
func parseWholeHeadRope(r *kvReader, c *EncoderConfig) error {
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

// parseRMSHeads reads a pre-norm encoder's RMS norm epsilon (required)
// and key/value head count (default: the head count).
func parseRMSHeads(r *kvReader, c *EncoderConfig) error {
	if _, err := r.f32(r.key(gguf.SuffixLayerNormRMSEps), &c.Eps, true); err != nil {
		return err
	}
	c.KVHeads = c.Heads
	_, err := r.u32(r.key(gguf.SuffixHeadCountKV), &c.KVHeads, false)
	return err
}

// getExperts reads a stacked expert tensor of shape [ne0, ne1, ne2] (ne2
// experts of ne1 rows); required.
func (l *encLoader) getExperts(name string, ne0, ne1, ne2 int) []float32 {
	if l.err != nil {
		return nil
	}
	t, ok := l.w.Tensor(name)
	if !ok {
		l.err = fmt.Errorf("%w: tensor %s missing", ErrWeights, name)
		return nil
	}
	if s := t.Shape(); len(s) != 3 || s[0] != int64(ne0) || s[1] != int64(ne1) || s[2] != int64(ne2) {
		l.err = fmt.Errorf("%w: tensor %s has shape %v, want [%d %d %d]", ErrWeights, name, s, ne0, ne1, ne2)
		return nil
	}
	dst := make([]float32, ne0*ne1*ne2)
	if err := t.ReadRows(0, ne1*ne2, dst); err != nil {
		l.err = fmt.Errorf("tensor %s: %w", name, err)
		return nil
	}
	return dst
}
