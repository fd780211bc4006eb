package forward

import (
	"context"
	"fmt"
	"math"
)

// The latent-attention families llama.cpp runs without absorption
// (src/models/minicpm3.cpp, plm.cpp): minicpm3 has a query LoRA, its
// scales hard-coded in the graph (embeddings ×12, each branch
// ×1.4/√n_layer, the final norm's output ×256/n_embd) and NeoX RoPE on the
// trailing n_rot values of each head; plm a plain attn_q, NORM RoPE, an
// ungated ReLU² FFN and the output tied to the embeddings.
func init() {
	archs["plm"] = &archInfo{
		norm: normRMS, rope: ropeNorm, ffn: ffnReLU2, mlaWhole: true,
		hparams: plmHparams,
		tensors: []rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			attnNormRule,
			{name: "blk.%d.attn_q.weight", dims: []dim{dEmbd, dQ}},
			{name: "blk.%d.attn_kv_a_mqa.weight", dims: []dim{dEmbd, dKVA}},
			{name: "blk.%d.attn_kv_a_norm.weight", dims: []dim{dKVLora}},
			{name: "blk.%d.attn_kv_b.weight", dims: []dim{dKVLora, dKVB}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dOutMLA, dEmbd}},
			ffnNormRule,
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
		},
	}
	archs["minicpm3"] = &archInfo{
		norm: normRMS, rope: ropeNeox, ffn: ffnSwiGLU, mlaWhole: true,
		hparams: minicpm3Hparams,
		tensors: []rule{
			{name: "token_embd.weight", dims: []dim{dEmbd, dVocab}},
			{name: "output_norm.weight", dims: []dim{dEmbd}},
			{name: "output.weight", dims: []dim{dEmbd, dVocab}, optional: true},
			{name: "rope_factors_long.weight", dims: []dim{dRot2}, optional: true},
			{name: "rope_factors_short.weight", dims: []dim{dRot2}, optional: true},
			attnNormRule,
			{name: "blk.%d.attn_q_a_norm.weight", dims: []dim{dQLora}},
			{name: "blk.%d.attn_kv_a_norm.weight", dims: []dim{dKVLora}},
			{name: "blk.%d.attn_q_a.weight", dims: []dim{dEmbd, dQLora}},
			{name: "blk.%d.attn_q_b.weight", dims: []dim{dQLora, dQ}},
			{name: "blk.%d.attn_kv_a_mqa.weight", dims: []dim{dEmbd, dKVA}},
			{name: "blk.%d.attn_kv_b.weight", dims: []dim{dKVLora, dKVB}},
			{name: "blk.%d.attn_output.weight", dims: []dim{dOutMLA, dEmbd}},
			ffnNormRule,
			{name: "blk.%d.ffn_gate.weight", dims: []dim{dEmbd, dFF}},
			{name: "blk.%d.ffn_down.weight", dims: []dim{dFF, dEmbd}},
			{name: "blk.%d.ffn_up.weight", dims: []dim{dEmbd, dFF}},
		},
	}
}

// minicpm3Hparams mirrors llama_model_minicpm3::load_arch_hparams: plm's
// and the query LoRA rank (required); and the graph's constants.
func minicpm3Hparams(c *Config, r *kvReader) error {
	if _, err := r.u32(r.key("attention.q_lora_rank"), &c.QLora, true); err != nil {
		return err
	}
	if c.QLora <= 0 || c.QLora > maxDim {
		return fmt.Errorf("%w: minicpm3 with q_lora_rank %d", ErrMetadata, c.QLora)
	}
	if err := plmHparams(c, r); err != nil {
		return err
	}
	c.EmbedScale = 12
	c.ResidualScale = 1.4 / float32(math.Sqrt(float64(float32(c.Layers))))
	c.LogitScale = 256 / float32(c.Embd)
	return nil
}

// plmHparams mirrors llama_model_plm::load_arch_hparams (the RMS epsilon
// and the KV LoRA rank, required) and the graph's kq_scale
// (1/√n_embd_head_k). The graph runs every head's key against its query,
// so head_count_kv must be head_count.
func plmHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if _, err := r.u32(r.key("attention.kv_lora_rank"), &c.KVLora, true); err != nil {
		return err
	}
	if c.HeadsKV != c.Heads || c.KVLora <= 0 || c.KVLora > maxDim || c.Rot <= 0 || c.Rot > c.HeadDimK {
		return fmt.Errorf("%w: %s with %d KV heads of %d, kv_lora_rank %d, n_rot %d, head size %d",
			ErrMetadata, c.Arch, c.HeadsKV, c.Heads, c.KVLora, c.Rot, c.HeadDimK)
	}
	// Without key_length_mla the MLA head sizes are the file's (attn_output's
	// input is n_head·n_embd_head_v).
	c.HeadDimKMLA, c.HeadDimVMLA = c.HeadDimK, c.HeadDimV
	c.AttnScale = 1 / float32(math.Sqrt(float64(float32(c.HeadDimK))))
	return nil
}

// latentAttention is the attention of llama_model_minicpm3::graph and
// llama_model_plm::graph: the query from attn_q or through its LoRA
// (attn_q_a, RMS norm, attn_q_b); attn_kv_a_mqa gives the
// latent (RMS-normalised, then expanded by attn_kv_b into each head's
// non-rotated key and its value) and one rotated key part shared by the
// heads; RoPE on the last n_rot values of each query head and on the
// shared part.
func (s *Session) latentAttention(ctx context.Context, il int, ly *layer, h [][]float32) ([][]float32, error) {
	c := s.m.cfg
	T := len(h)
	rank, nRot, dk, dv := c.KVLora, c.Rot, c.HeadDimK, c.HeadDimV
	nope := dk - nRot
	q, err := s.mlaQuery(ctx, ly, h, c.Heads*dk)
	if err != nil {
		return nil, err
	}
	kva, latent := rows(T, rank+nRot), rows(T, rank)
	if err := s.mul(ctx, ly.wkvA, nil, h, kva); err != nil {
		return nil, err
	}
	for t := range kva {
		rmsNorm(latent[t], kva[t][:rank], ly.kvANorm, c.NormEps)
	}
	kv := rows(T, c.Heads*(nope+dv))
	if err := s.mul(ctx, ly.wkvB, nil, latent, kv); err != nil {
		return nil, err
	}
	k, v := rows(T, c.kvDimK()), rows(T, c.kvDimV())
	cache := make([]float32, nRot)
	for t := range h {
		ropeCache(cache, s.n+t, nRot, c.RopeBase, c.RopeFreqScale, s.factors, c)
		pe := kva[t][rank:]
		rope(pe, cache, nRot, c.rope)
		for hd := 0; hd < c.Heads; hd++ {
			src := kv[t][hd*(nope+dv) : (hd+1)*(nope+dv)]
			kh := k[t][hd*dk : (hd+1)*dk]
			copy(kh, src[:nope])
			copy(kh[nope:], pe)
			copy(v[t][hd*dv:(hd+1)*dv], src[nope:])
			rope(q[t][hd*dk+nope:], cache, nRot, c.rope)
		}
	}
	s.storeKV(il, k, v)
	att := rows(T, c.outDimV())
	if err := s.attention(ctx, il, q, att); err != nil {
		return nil, err
	}
	o := rows(T, c.Embd)
	if err := s.mul(ctx, ly.wo, nil, att, o); err != nil {
		return nil, err
	}
	return o, nil
}
