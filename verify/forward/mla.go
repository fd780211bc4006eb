package forward

import "context"

// mlaAttention is deepseek2's multi-head latent attention as
// llama_model_deepseek2::graph runs it with the absorption optimisation:
// the query (attn_q, or attn_q_a → RMS norm → attn_q_b) splits per head
// into a non-rotated part, absorbed through attn_k_b into the latent
// space, and a rotated part; the key is the RMS-normalised latent
// (attn_kv_a_mqa's first kv_lora_rank values) followed by its rotated
// part, shared by every head (MQA); the value is the latent. Each head's
// attended latent is decompressed by attn_v_b, and the heads go through
// attn_output. kimi-linear's MLA blocks (rope none) leave the rotated
// parts as they are.
func (s *Session) mlaAttention(ctx context.Context, il int, ly *layer, h [][]float32) ([][]float32, error) {
	c := s.m.cfg
	T := len(h)
	rank, nRot, kMLA, vMLA := c.KVLora, c.Rot, c.HeadDimKMLA, c.HeadDimVMLA
	nope := kMLA - nRot
	q, err := s.mlaQuery(ctx, ly, h, c.Heads*kMLA)
	if err != nil {
		return nil, err
	}
	kva := rows(T, rank+nRot)
	if err := s.mul(ctx, ly.wkvA, nil, h, kva); err != nil {
		return nil, err
	}
	cache := make([]float32, nRot)
	Q := rows(T, c.Heads*(rank+nRot))
	for t := range h {
		roped := c.rope != ropeNone // kimi-linear's MLA blocks have no RoPE
		if roped {
			ropeCache(cache, s.n+t, nRot, c.RopeBase, c.RopeFreqScale, s.factors, c)
		}
		kv := kva[t]
		rmsNorm(kv[:rank], kv[:rank], ly.kvANorm, c.NormEps)
		if roped {
			rope(kv[rank:], cache, nRot, c.rope)
		}
		kd, vd := s.k[il][(s.n+t)*c.kvDimK():][:len(kv)], s.v[il][(s.n+t)*c.kvDimV():][:rank]
		copy(kd, kv)
		copy(vd, kv[:rank])
		if s.m.kvF16 {
			roundFP16(kd)
			roundFP16(vd)
		}
		for hd := 0; hd < c.Heads; hd++ {
			qh := q[t][hd*kMLA : (hd+1)*kMLA]
			if roped {
				rope(qh[nope:], cache, nRot, c.rope)
			}
			dst := Q[t][hd*(rank+nRot) : (hd+1)*(rank+nRot)]
			if err := s.mul(ctx, ly.wkB[hd], nil, [][]float32{qh[:nope]}, [][]float32{dst[:rank]}); err != nil {
				return nil, err
			}
			copy(dst[rank:], qh[nope:])
		}
	}
	att := rows(T, c.outDimV())
	if err := s.attention(ctx, il, Q, att); err != nil {
		return nil, err
	}
	heads := rows(T, c.Heads*vMLA)
	for t := range att {
		for hd := 0; hd < c.Heads; hd++ {
			in := att[t][hd*rank : (hd+1)*rank]
			out := heads[t][hd*vMLA : (hd+1)*vMLA]
			if err := s.mul(ctx, ly.wvB[hd], nil, [][]float32{in}, [][]float32{out}); err != nil {
				return nil, err
			}
		}
	}
	o := rows(T, c.Embd)
	if err := s.mul(ctx, ly.wo, ly.bo, heads, o); err != nil {
		return nil, err
	}
	return o, nil
}

// mlaQuery is the query of the latent-attention graphs: attn_q, or
// attn_q_a → RMS norm → attn_q_b (the query LoRA), width values a token.
func (s *Session) mlaQuery(ctx context.Context, ly *layer, h [][]float32, width int) ([][]float32, error) {
	c := s.m.cfg
	q := rows(len(h), width)
	if ly.wq != nil {
		return q, s.mul(ctx, ly.wq, nil, h, q)
	}
	qa := rows(len(h), c.QLora)
	if err := s.mul(ctx, ly.wqA, nil, h, qa); err != nil {
		return nil, err
	}
	for _, r := range qa {
		rmsNorm(r, r, ly.qANorm, c.NormEps)
	}
	return q, s.mul(ctx, ly.wqB, nil, qa, q)
}
