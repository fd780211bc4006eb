package arch

import (
	"fmt"
	"math"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newChatGLM, "GlmForCausalLM", "ChatGLMModel", "ChatGLMForConditionalGeneration")
	// Glm4vTextConfig.__post_init__: num_key_value_heads = num_attention_heads when None.
	derivedKeys["glm4v_text"] = append(derivedKeys["glm4v_text"], deriveKVHeads)
	register(newGLM4, "Glm4ForCausalLM", "Glm4vForConditionalGeneration")
	register(newGLM4Moe, "Glm4MoeForCausalLM", "Glm4vMoeForConditionalGeneration")
}

// The GLM families of Zhipu AI / Z.ai: ChatGLMModel (conversion/chatglm.py,
// GGUF arch chatglm) for transformers' Glm layout of GLM-4, Glm4Model
// (conversion/glm.py, arch glm4) for GLM-4-0414 and Glm4MoeModel (arch
// glm4moe) for GLM-4.5 / GLM-4.6. All three rotate only part of each head
// (partial_rotary_factor, 0.5 by default).

// partialRopeDims is int(dims × rope_parameters.get("partial_rotary_factor",
// 0.5)), the rope dimension count the GLM classes write.
func (t *text) partialRopeDims(dims int64) (int64, error) {
	f := 0.5
	if v, ok := t.rope["partial_rotary_factor"]; ok {
		var err error
		if f, err = asFloat(v); err != nil {
			return 0, &ConfigError{Key: "partial_rotary_factor", Value: v, Msg: "is not a number"}
		}
	}
	r := math.Trunc(float64(dims) * f)
	if !(r >= 0 && r <= 1<<32-1) {
		return 0, &ConfigError{Key: "partial_rotary_factor", Value: t.rope["partial_rotary_factor"], Msg: fmt.Sprintf("gives %g rotary dimensions of %d", r, dims)}
	}
	return int64(r), nil
}

// chatGLM is ChatGLMModel: its own hyperparameter keys (ChatGLM's
// seq_length, ffn_hidden_size, multi_query_group_num, layernorm_epsilon,
// rope_ratio, with fallbacks that make transformers' Glm config usable), no
// TextModel parameters, tensors under their TextModel names once
// "transformer." is stripped.
type chatGLM struct{ text }

func newChatGLM(h HParams, dir string) (Model, error) {
	if _, ok := h["vocab_size"]; !ok {
		// set_vocab reads hparams.get("padded_vocab_size",
		// hparams["vocab_size"]): THUDM's own config.json (only
		// padded_vocab_size, read as it is since AutoConfig cannot load
		// remote code) makes llama.cpp's converter fail with KeyError.
		return nil, &ConfigError{Key: "vocab_size", Value: nil, Msg: "is missing (llama.cpp's converter fails on it too: ChatGLMModel.set_vocab raises KeyError: 'vocab_size' even with padded_vocab_size)"}
	}
	t, err := newText("chatglm", h, dir)
	return &chatGLM{t}, err
}

func (m *chatGLM) Vocab() VocabKind { return VocabChatGLM }

// Params is ChatGLMModel.set_gguf_parameters. The context length is
// seq_length, else the embedding width (transformers' Glm config has no
// seq_length: the converter writes hidden_size); the rope dimension count
// ignores head_dim (attention_dim, else hidden_size // heads, times the
// partial rotary factor); the rope base is 10000 × rope_ratio, never
// rope_theta; add_bos_token false is written among the hyperparameters.
func (m *chatGLM) Params(ft gguf.FileType) ([]gguf.KV, error) {
	h := m.h
	k := &kv{arch: m.arch}
	nEmbd := h.get("hidden_size", h["n_embed"])
	if nEmbd == nil {
		return nil, &ConfigError{Key: "hidden_size", Value: nil, Msg: "is missing (n_embed neither)"}
	}
	nHead := h.get("n_head", h["num_attention_heads"])
	if nHead == nil {
		return nil, &ConfigError{Key: "num_attention_heads", Value: nil, Msg: "is missing (n_head neither)"}
	}
	nHeadKV := h.get("multi_query_group_num", h.get("num_key_value_heads", nHead))
	ff := h.get("ffn_hidden_size", h["intermediate_size"])
	if _, ok := h["ffn_hidden_size"]; !ok {
		if _, ok := h["intermediate_size"]; !ok {
			n, err := asInt(nEmbd)
			if err != nil || !isInt(nEmbd) {
				return nil, &ConfigError{Key: "hidden_size", Value: nEmbd, Msg: "is not an integer"}
			}
			ff = 4 * n
		}
	}
	steps := []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"context_length", h.get("seq_length", nEmbd), k.u32},
		{"embedding_length", nEmbd, k.u32},
		{"feed_forward_length", ff, k.u32OrArray},
		{"block_count", m.blocks, k.u32},
		{"attention.head_count", nHead, k.u32OrArray},
		{"attention.head_count_kv", nHeadKV, k.u32OrArray},
		{"attention.layer_norm_rms_epsilon", h.get("layernorm_epsilon", 1e-5), k.f32},
	}
	for _, s := range steps {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	var dims int64
	if v, ok := h["attention_dim"]; ok {
		n, err := asInt(v)
		if err != nil || !isInt(v) {
			return nil, &ConfigError{Key: "attention_dim", Value: v, Msg: "is not an integer"}
		}
		dims = n
	} else {
		hidden, err := h.MustInt("hidden_size")
		if err != nil {
			return nil, err
		}
		heads, err := h.MustInt("num_attention_heads")
		if err != nil {
			return nil, err
		}
		if heads == 0 {
			return nil, &ConfigError{Key: "num_attention_heads", Value: heads, Msg: "is not a head count"}
		}
		dims = floorDiv(hidden, heads)
	}
	dims, err := m.partialRopeDims(dims)
	if err != nil {
		return nil, err
	}
	if err := k.u32("rope.dimension_count", dims); err != nil {
		return nil, err
	}
	k.l.Set(gguf.KeyTokenizerAddBOS, gguf.Bool(false))
	base := 10000.0
	if v, ok := h["rope_ratio"]; ok {
		r, err := asFloat(v)
		if err != nil {
			return nil, &ConfigError{Key: "rope_ratio", Value: v, Msg: "is not a number"}
		}
		base *= r
	}
	if err := k.f32("rope.freq_base", base); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Filter is ChatGLMModel.filter_tensors: the rotary inverse frequencies
// dropped, the "transformer." prefix of ChatGLM checkpoints removed, then
// TextModel's filter.
func (m *chatGLM) Filter(name string) (string, bool) {
	if strings.HasSuffix(name, ".rotary_pos_emb.inv_freq") {
		return "", false
	}
	return m.text.Filter(strings.TrimPrefix(name, "transformer."))
}

func (m *chatGLM) Modify(in Input, bid int) ([]Output, error) { return m.mapped(in, in.Name, bid, nil) }

// glm4 is Glm4Model: TextModel's parameters and tensors (q/k/v biases,
// fused gate_up_proj as ffn_up, post-attention and post-MLP norms) and the
// partial rope dimension count; with M-RoPE (GLM-4.1V's mrope_section) the
// rotary half of each Q/K head is reordered to NeoX order.
type glm4 struct{ text }

func newGLM4(h HParams, dir string) (Model, error) {
	t, err := newText("glm4", h, dir)
	return &glm4{t}, err
}

func (m *glm4) Vocab() VocabKind { return VocabGLM4 }

// Params is Glm4Model.set_gguf_parameters.
func (m *glm4) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	if err := m.addPartialRopeDims(k); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// addPartialRopeDims writes int((head_dim or hidden // heads) × the
// partial rotary factor) as the rope dimension count.
func (t *text) addPartialRopeDims(k *kv) error {
	d, err := headDim(t.h)
	if err != nil {
		return err
	}
	if d, err = t.partialRopeDims(d); err != nil {
		return err
	}
	return k.u32("rope.dimension_count", d)
}

// Modify is Glm4Model.modify_tensors: with M-RoPE, Q and K (weights and
// biases) reordered by normal_to_neox; otherwise names mapped only.
func (m *glm4) Modify(in Input, bid int) ([]Output, error) {
	if _, mrope := m.rope["mrope_section"]; !mrope {
		return m.mapped(in, in.Name, bid, nil)
	}
	isQ := strings.HasSuffix(in.Name, "q_proj.weight") || strings.HasSuffix(in.Name, "q_proj.bias")
	isK := strings.HasSuffix(in.Name, "k_proj.weight") || strings.HasSuffix(in.Name, "k_proj.bias")
	if !isQ && !isK {
		return m.mapped(in, in.Name, bid, nil)
	}
	order, err := m.neoxRows(in, isQ)
	if err != nil {
		return nil, fmt.Errorf("M-RoPE Q/K reordering: %w", err)
	}
	out, err := m.mapped(in, in.Name, bid, reorderRows(in.Shape, order))
	if err != nil {
		return nil, err
	}
	out[0].RowOrder = order
	return out, nil
}

// neoxRows is Glm4Model.normal_to_neox as a row order: per head, the
// rotary dimensions' even rows then their odd rows, then the rest.
func (m *glm4) neoxRows(in Input, isQ bool) ([]int64, error) {
	nHead, err := m.h.MustInt("num_attention_heads")
	if err != nil {
		return nil, err
	}
	nKV, err := m.h.MustInt("num_key_value_heads")
	if err != nil {
		return nil, err
	}
	hd := int64(0)
	if v, ok := m.h["head_dim"]; ok {
		if hd, err = asInt(v); err != nil {
			return nil, &ConfigError{Key: "head_dim", Value: v, Msg: "is not an integer"}
		}
	} else {
		hidden, err := m.h.MustInt("hidden_size")
		if err != nil {
			return nil, err
		}
		if nHead <= 0 {
			return nil, &ConfigError{Key: "num_attention_heads", Value: nHead, Msg: "is not a head count"}
		}
		hd = floorDiv(hidden, nHead)
	}
	if len(in.Shape) != 1 && len(in.Shape) != 2 {
		return nil, fmt.Errorf("only 1-D and 2-D tensors are supported, not %v", in.Shape)
	}
	if hd <= 0 || in.Shape[0]%hd != 0 {
		return nil, fmt.Errorf("%d rows are not whole heads of %d", in.Shape[0], hd)
	}
	heads := in.Shape[0] / hd
	if heads != nHead && (isQ || heads != nKV) {
		return nil, fmt.Errorf("mismatch in effective heads: computed %d, expected %d or %d", heads, nHead, nKV)
	}
	rot, err := m.partialRopeDims(hd)
	if err != nil {
		return nil, err
	}
	if rot%2 != 0 || rot > hd {
		return nil, fmt.Errorf("rotary_dim %d must be even and at most head_dim %d", rot, hd)
	}
	order := make([]int64, 0, in.Shape[0])
	for h := range heads {
		base := h * hd
		for i := int64(0); i < rot; i += 2 {
			order = append(order, base+i)
		}
		for i := int64(1); i < rot; i += 2 {
			order = append(order, base+i)
		}
		for i := rot; i < hd; i++ {
			order = append(order, base+i)
		}
	}
	return order, nil
}

// glm4Moe is Glm4MoeModel (GLM-4.5, GLM-4.6): TextModel's parameters and
// tensors, leading dense blocks, sigmoid-routed experts stacked per block
// with their e_score_correction bias, a shared expert, and the NextN/MTP
// blocks after num_hidden_layers kept as extra blocks (the converter's
// default; its --no-mtp is not offered).
type glm4Moe struct {
	text
	experts mlpExperts
	nextn   any // num_nextn_predict_layers as config.json gives it (nil: absent)
}

func newGLM4Moe(h HParams, dir string) (Model, error) {
	t, err := newText("glm4moe", h, dir)
	if err != nil {
		return nil, err
	}
	m := &glm4Moe{text: t}
	if v, ok := h["num_nextn_predict_layers"]; ok {
		n, err := asInt(v)
		if err != nil || !isInt(v) || n < 0 || n > 1<<10 {
			return nil, &ConfigError{Key: "num_nextn_predict_layers", Value: v, Msg: "is not a layer count"}
		}
		m.nextn = v
		if n > 0 {
			// block_count += num_nextn_predict_layers, and the name map
			// rebuilt for it.
			if m.names, err = NewNameMap(t.arch, t.blocks+int(n)); err != nil {
				return nil, err
			}
			m.blocks += int(n)
		}
	}
	return m, nil
}

func (m *glm4Moe) Vocab() VocabKind { return VocabGLM }

// Params is Glm4MoeModel.set_gguf_parameters: TextModel's, the partial
// rope dimension count, then the MoE keys present in the config, the
// sigmoid gating and the NextN layer count.
func (m *glm4Moe) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	if err := m.addPartialRopeDims(k); err != nil {
		return nil, err
	}
	for _, e := range []struct{ key, suffix string }{
		{"n_routed_experts", "expert_count"},
		{"moe_intermediate_size", "expert_feed_forward_length"},
		{"n_shared_experts", "expert_shared_count"},
		{"first_k_dense_replace", "leading_dense_block_count"},
	} {
		if v := m.h[e.key]; v != nil {
			if err := k.u32(e.suffix, v); err != nil {
				return nil, err
			}
		}
	}
	k.l.Set(k.key("expert_gating_func"), gguf.Uint32(2)) // ExpertGatingFuncType.SIGMOID
	if v := m.h["routed_scaling_factor"]; v != nil {
		if err := k.f32("expert_weights_scale", v); err != nil {
			return nil, err
		}
	}
	if v := m.h["norm_topk_prob"]; v != nil {
		b, ok := v.(bool)
		if !ok {
			return nil, &ConfigError{Key: "norm_topk_prob", Value: v, Msg: "is not a boolean"}
		}
		k.l.Set(k.key("expert_weights_norm"), gguf.Bool(b))
	}
	if m.nextn != nil {
		if err := k.u32("nextn_predict_layers", m.nextn); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// Modify is Glm4MoeModel.modify_tensors: the token embedding passed on as
// token_embd.weight, the routed experts stacked per block.
func (m *glm4Moe) Modify(in Input, bid int) ([]Output, error) {
	if in.Name == "model.embed_tokens.weight" {
		out, err := m.mapped(in, "token_embd.weight", bid, nil)
		if err == nil {
			out[0].HFName = "token_embd.weight"
		}
		return out, err
	}
	if strings.Contains(in.Name, "mlp.experts") {
		return m.experts.add(&m.text, in, bid, "n_routed_experts")
	}
	return m.mapped(in, in.Name, bid, nil)
}

func (m *glm4Moe) Finish() error { return m.experts.finish() }
