package arch

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newKimiLinear, "KimiLinearModel", "KimiLinearForCausalLM")
	derivedKeys["kimi_linear"] = append(derivedKeys["kimi_linear"], deriveKVHeads, deriveKimiLinear)
}

// kimiLinearAttributeMap is KimiLinearConfig.attribute_map (transformers
// 5.24 configuration_kimi_linear.py), data: to_dict writes each field under
// its mapped name, which is what the converter reads (num_experts,
// num_shared_experts …).
var kimiLinearAttributeMap = [][2]string{
	{"max_position_embeddings", "model_max_length"},
	{"norm_topk_prob", "moe_renormalize"},
	{"n_group", "num_expert_group"},
	{"num_local_experts", "num_experts"},
	{"num_experts_per_tok", "num_experts_per_token"},
	{"n_shared_experts", "num_shared_experts"},
}

// deriveKimiLinear is KimiLinearConfig as to_dict reports it: the fields
// under their attribute_map names (a value config.json gives under the
// mapped name wins: it is set after the fields), and head_dim =
// qk_rope_head_dim unless config.json gives one.
func deriveKimiLinear(h HParams) {
	for _, p := range kimiLinearAttributeMap {
		v, ok := h[p[0]]
		if !ok {
			continue
		}
		delete(h, p[0])
		if _, set := h[p[1]]; !set {
			h[p[1]] = v
		}
	}
	if _, ok := h["head_dim"]; !ok {
		if v, ok := h["qk_rope_head_dim"]; ok {
			h["head_dim"] = v
		}
	}
}

// kimiLinear is KimiLinearModel (conversion/kimi_linear.py, arch
// kimi-linear): Kimi Delta Attention blocks (short convolutions on Q, K
// and V, a forget gate, a gated output norm) and MLA blocks where
// linear_attn_config.full_attn_layers (1-based) says, a leading dense
// block, then sigmoid-routed experts (w1, w2, w3 stacked as gate, down,
// up) with shared experts.
type kimiLinear struct {
	text
	experts *expertStacker
}

func newKimiLinear(h HParams, dir string) (Model, error) {
	if dir != "" && isFile(filepath.Join(dir, "tiktoken.model")) && !isFile(filepath.Join(dir, "tokenizer.json")) {
		// set_vocab's fallback after the gpt2 routine, as Kimi K2's.
		return nil, &UnsupportedError{Arch: "Kimi Linear (KimiLinearForCausalLM with tiktoken.model)", Reason: kimiTiktoken}
	}
	t, err := newText("kimi-linear", h, dir)
	if err != nil {
		return nil, err
	}
	return &kimiLinear{text: t}, nil
}

// Vocab is KimiLinearModel.set_vocab: the gpt2 routine (its tiktoken
// fallback is refused by the constructor).
func (m *kimiLinear) Vocab() VocabKind { return VocabGPT2 }

// Params is KimiLinearModel.set_gguf_parameters: TextModel's with
// num_key_value_heads set to 1 (MLA as MQA), then head_count_kv again as a
// per-block array (1 on full-attention blocks, 0 on KDA ones), the KDA
// and MLA widths and the expert keys.
func (m *kimiLinear) Params(ft gguf.FileType) ([]gguf.KV, error) {
	h := maps.Clone(m.h)
	h["num_key_value_heads"] = jsonInt(1)
	t := m.text
	t.h = h
	k, err := t.params(ft)
	if err != nil {
		return nil, err
	}
	if err := k.u32("vocab_size", required(h, "vocab_size")); err != nil {
		return nil, err
	}
	lac, ok := h["linear_attn_config"].(map[string]any)
	if !ok {
		return nil, &ConfigError{Key: "linear_attn_config", Value: h["linear_attn_config"], Msg: "is not an object"}
	}
	fullList, ok := lac["full_attn_layers"].([]any)
	if !ok {
		return nil, &ConfigError{Key: "linear_attn_config.full_attn_layers", Value: lac["full_attn_layers"], Msg: "is not a list of layer numbers"}
	}
	full := make([]int64, len(fullList))
	for i, v := range fullList {
		if full[i], err = asInt(v); err != nil {
			return nil, &ConfigError{Key: "linear_attn_config.full_attn_layers", Value: v, Msg: "holds a value that is not a layer number"}
		}
	}
	kvHeads := make([]any, m.blocks)
	for il := range kvHeads {
		kvHeads[il] = jsonInt(0)
		if slices.Contains(full, int64(il+1)) {
			kvHeads[il] = h["num_key_value_heads"]
		}
	}
	if err := k.u32OrArray("attention.head_count_kv", kvHeads); err != nil {
		return nil, err
	}
	for _, e := range []struct{ key, suffix string }{
		{"short_conv_kernel_size", "ssm.conv_kernel"},
		{"head_dim", "kda.head_dim"},
	} {
		if v, ok := lac[e.key]; ok && v != nil {
			if err := k.u32(e.suffix, v); err != nil {
				return nil, err
			}
		}
	}
	if v, _, ok := h.Find("q_lora_rank", "n_lora_q"); ok && v != nil {
		if err := k.u32("attention.q_lora_rank", v); err != nil {
			return nil, err
		}
	}
	kvRank, err := h.MustInt("kv_lora_rank", "n_lora_kv")
	if err != nil {
		return nil, err
	}
	if err := k.u32("attention.kv_lora_rank", kvRank); err != nil {
		return nil, err
	}
	rope, err := h.MustInt("qk_rope_head_dim", "n_rot")
	if err != nil {
		return nil, err
	}
	if err := k.u32("rope.dimension_count", rope); err != nil {
		return nil, err
	}
	if err := k.u32("attention.key_length", kvRank+rope); err != nil {
		return nil, err
	}
	if v, _, ok := h.Find("n_embd_head_k_mla"); ok && v != nil {
		if err := k.u32("attention.key_length_mla", v); err != nil {
			return nil, err
		}
	} else if nope, ok, err := h.Int("qk_nope_head_dim"); err != nil {
		return nil, err
	} else if ok {
		if err := k.u32("attention.key_length_mla", nope+rope); err != nil {
			return nil, err
		}
	}
	if v, _, ok := h.Find("n_embd_head_v_mla", "v_head_dim"); ok && v != nil {
		if err := k.u32("attention.value_length_mla", v); err != nil {
			return nil, err
		}
	}
	for _, e := range []struct{ key, suffix string }{
		{"moe_intermediate_size", "expert_feed_forward_length"},
		{"num_shared_experts", "expert_shared_count"},
		{"first_k_dense_replace", "leading_dense_block_count"},
	} {
		if err := k.u32(e.suffix, required(h, e.key)); err != nil {
			return nil, err
		}
	}
	if err := k.f32("expert_weights_scale", required(h, "routed_scaling_factor")); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// kimiExpertNames are KimiLinearModel's expert projections and the GGUF
// tensors they stack into, in its loop order.
var kimiExpertNames = map[string]string{"w1": "ffn_gate_exps", "w2": "ffn_down_exps", "w3": "ffn_up_exps"}

// Modify is KimiLinearModel.modify_tensors: the KDA convolutions reshaped
// to [1, d_inner, 1, d_conv] (ggml [d_conv, 1, d_inner, 1]), A_log made
// -exp(A_log), dt_bias renamed dt_proj.bias, experts stacked, kv_b_proj
// split for MLA.
func (m *kimiLinear) Modify(in Input, bid int) ([]Output, error) {
	name := in.Name
	var build func([][]float32) ([]float32, error)
	var shape []int64
	if strings.HasSuffix(name, ".q_conv1d.weight") || strings.HasSuffix(name, ".k_conv1d.weight") || strings.HasSuffix(name, ".v_conv1d.weight") {
		switch s := in.Shape; {
		case len(s) == 2:
			shape = []int64{1, s[0], 1, s[1]}
		case len(s) == 3 && s[1] == 1:
			shape = []int64{1, s[0], 1, s[2]}
		case len(s) == 3:
			// The converter's reshape of [d_inner, x, d_conv] to
			// [1, d_inner, 1, d_conv] fails.
			return nil, fmt.Errorf("convolution %s of shape %v, want [d_inner, 1, d_conv]", name, s)
		}
	}
	if strings.HasSuffix(name, ".A_log") {
		build = elementwise(negExp(in.DType))
	}
	if strings.HasSuffix(name, ".dt_bias") {
		name = strings.TrimSuffix(name, ".dt_bias") + ".dt_proj.bias"
	}
	if strings.Contains(name, "block_sparse_moe.experts") {
		if m.experts == nil {
			n, err := expertCount(m.h, "num_local_experts", "num_experts")
			if err != nil {
				return nil, err
			}
			m.experts = newExpertStacker(n, m.blocks, []string{"w1", "w2", "w3"}, m.names)
		}
		return m.experts.add(in, build, bid, func(bid, xid int, wid string) string {
			return fmt.Sprintf("model.layers.%d.block_sparse_moe.experts.%d.%s.weight", bid, xid, wid)
		}, func(bid int, wid string) string {
			return fmt.Sprintf("blk.%d.%s.weight", bid, kimiExpertNames[wid])
		})
	}
	if strings.HasSuffix(name, "kv_b_proj.weight") {
		nkv, err := m.h.MustInt("num_key_value_heads")
		if err != nil {
			return nil, err
		}
		v, err := m.h.MustInt("n_embd_head_v_mla", "v_head_dim")
		if err != nil {
			return nil, err
		}
		nope, err := m.h.MustInt("qk_nope_head_dim")
		if err != nil {
			return nil, err
		}
		return mlaKVB(&m.text, in, bid, nkv, nope, v)
	}
	out, err := m.mapped(in, name, bid, build)
	if err != nil {
		return nil, err
	}
	if shape != nil {
		out[0].Shape = shape
	}
	return out, nil
}

func (m *kimiLinear) Finish() error { return m.experts.finish() }
