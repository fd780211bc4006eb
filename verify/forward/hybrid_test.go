package forward

import "testing"

// TestBambaPartialRotary: the converter permutes Bamba's Q and K rows for
// llama.cpp's NORM rotation over the whole head (undo_permute), while Bamba
// rotates only attn_rotary_emb dimensions, NEOX-style: llama.cpp's logits
// (and verify's) differ from transformers' by 0.115 relative on the
// fixture. Undo the permutation and rotate NEOX-style, and the rest of the
// graph agrees with transformers to float32 precision.
func TestBambaPartialRotary(t *testing.T) {
	checkFamily(t, "bamba", "granitehybrid", 1e-5, nil, func(c *Config) { c.rope = ropeNeox }, func(w Weights) Weights {
		return unpermuted{w, map[string]int{"blk.2.attn_q.weight": 2, "blk.2.attn_k.weight": 1}}
	})
}

// unpermuted undoes convert_hf_to_gguf's LlamaModel.permute on the named
// tensors (with their head counts).
type unpermuted struct {
	Weights
	heads map[string]int
}

func (u unpermuted) Tensor(name string) (Tensor, bool) {
	t, ok := u.Weights.Tensor(name)
	heads := u.heads[name]
	if !ok || heads == 0 {
		return t, ok
	}
	s := t.Shape()
	ne0, n := int(s[0]), int(s[1])
	data := make([]float32, ne0*n)
	if err := t.ReadRows(0, n, data); err != nil {
		return nil, false
	}
	out := &memTensor{shape: s, data: make([]float32, len(data))}
	hd := n / heads
	for h := range heads {
		for j := range hd / 2 {
			for k := range 2 {
				src, dst := h*hd+2*j+k, h*hd+k*(hd/2)+j
				copy(out.data[dst*ne0:(dst+1)*ne0], data[src*ne0:(src+1)*ne0])
			}
		}
	}
	return out, true
}
