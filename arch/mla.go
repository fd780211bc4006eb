package arch

import (
	"fmt"
	"strings"
)

// mlaKVB splits multi-head latent attention's kv_b_proj, as
// DeepseekV2Model.modify_tensors does for llama.cpp's absorbed MLA: the
// [heads·(nope+v), kv_lora_rank] matrix is viewed as [heads, nope+v,
// kv_lora_rank]; the first nope rows of each head, transposed to
// [heads, kv_lora_rank, nope], become k_b_proj (attn_k_b), the other v
// rows, [heads, v, kv_lora_rank], v_b_proj (attn_v_b). nHeadKV is
// num_key_value_heads as the converter's hparams have it when tensors are
// processed (before set_gguf_parameters sets it to 1).
func mlaKVB(t *text, in Input, bid int, nHeadKV, nope, v int64) ([]Output, error) {
	if nHeadKV <= 0 || nope <= 0 || v <= 0 {
		return nil, fmt.Errorf("kv_b_proj split: num_key_value_heads %d, qk_nope_head_dim %d, v_head_dim %d must be positive", nHeadKV, nope, v)
	}
	if len(in.Shape) != 2 || in.Shape[0] != nHeadKV*(nope+v) {
		// The converter's assert.
		return nil, fmt.Errorf("kv_b_proj split: shape %v, want [num_key_value_heads (%d) × (qk_nope_head_dim %d + v_head_dim %d), kv_lora_rank]",
			in.Shape, nHeadKV, nope, v)
	}
	rank := in.Shape[1]
	per := nope + v
	kb := func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		dst := make([]float32, nHeadKV*rank*nope)
		for h := range nHeadKV {
			for j := range nope {
				row := src[(h*per+j)*rank : (h*per+j+1)*rank]
				for r, x := range row {
					dst[(h*rank+int64(r))*nope+j] = x
				}
			}
		}
		return dst, nil
	}
	vb := func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		dst := make([]float32, 0, nHeadKV*v*rank)
		for h := range nHeadKV {
			dst = append(dst, src[(h*per+nope)*rank:(h+1)*per*rank]...)
		}
		return dst, nil
	}
	var outs []Output
	for _, p := range []struct {
		part  string
		build func([][]float32) ([]float32, error)
		shape []int64
	}{
		{"k_b_proj", kb, []int64{nHeadKV, rank, nope}},
		{"v_b_proj", vb, []int64{nHeadKV, v, rank}},
	} {
		name := strings.Replace(in.Name, "kv_b_proj", p.part, 1)
		o, err := t.mapped(in, name, bid, p.build)
		if err != nil {
			return nil, err
		}
		o[0].Shape = p.shape
		outs = append(outs, o...)
	}
	return outs, nil
}
