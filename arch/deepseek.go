package arch

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newDeepseek, "DeepseekForCausalLM")
	register(newDeepseek2(deepseekV2), "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
	register(newDeepseek2(glm4MoeLite), "Glm4MoeLiteForCausalLM")
	// DeepseekV2Config, DeepseekV3Config.__post_init__:
	// head_dim = qk_rope_head_dim (whatever config.json says), and for V2
	// and V3 num_key_value_heads = num_attention_heads when None.
	derivedKeys["deepseek_v2"] = append(derivedKeys["deepseek_v2"], deriveRopeHeadDim, deriveKVHeads)
	derivedKeys["deepseek_v3"] = append(derivedKeys["deepseek_v3"], deriveKVHeads, deriveRopeHeadDim)
	derivedKeys["glm4_moe_lite"] = append(derivedKeys["glm4_moe_lite"], deriveGlm4MoeLiteHeadDim)
}

// deriveRopeHeadDim is the DeepSeek configs' head_dim = qk_rope_head_dim.
func deriveRopeHeadDim(h HParams) {
	if v, ok := h["qk_rope_head_dim"]; ok {
		h["head_dim"] = v
	}
}

// deriveGlm4MoeLiteHeadDim is Glm4MoeLiteConfig's attribute_map:
// head_dim is another name of qk_rope_head_dim, which to_dict writes
// instead.
func deriveGlm4MoeLiteHeadDim(h HParams) {
	if v, ok := h["head_dim"]; ok {
		h["qk_rope_head_dim"] = v
		delete(h, "head_dim")
	}
}

// deepseek is DeepseekModel (conversion/deepseek.py, DeepSeek-MoE 16B,
// arch deepseek): Llama's Q/K permutation, per-expert MLPs stacked, shared
// experts, a leading dense block.
type deepseek struct {
	text
	experts mlpExperts
}

func newDeepseek(h HParams, dir string) (Model, error) {
	t, err := newText("deepseek", h, dir)
	if err != nil {
		return nil, err
	}
	return &deepseek{text: t}, nil
}

// Vocab is DeepseekModel.set_vocab: SentencePiece when the folder has a
// tokenizer.model, the gpt2 routine otherwise — Qwen2Model.set_vocab's
// rule.
func (m *deepseek) Vocab() VocabKind { return VocabQwen2 }

// Params is DeepseekModel.set_gguf_parameters.
func (m *deepseek) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	h := m.h
	ropeDim, err := headDim(h)
	if err != nil {
		return nil, err
	}
	if err := k.u32("rope.dimension_count", ropeDim); err != nil {
		return nil, err
	}
	k.l.Set(k.key("rope.scaling.type"), gguf.String("none"))
	for _, e := range []struct{ key, suffix string }{
		{"first_k_dense_replace", "leading_dense_block_count"},
		{"vocab_size", "vocab_size"},
		{"moe_intermediate_size", "expert_feed_forward_length"},
	} {
		if err := k.u32(e.suffix, required(h, e.key)); err != nil {
			return nil, err
		}
	}
	k.l.Set(k.key("expert_weights_scale"), gguf.Float32(1))
	for _, e := range []struct{ key, suffix string }{
		{"n_routed_experts", "expert_count"},
		{"n_shared_experts", "expert_shared_count"},
	} {
		if err := k.u32(e.suffix, required(h, e.key)); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// required is a key the converter reads with hparams[key]: nil (which no
// add_* accepts) when absent.
func required(h HParams, key string) any { return h[key] }

// Modify is DeepseekModel.modify_tensors: q_proj and k_proj permuted as
// LlamaModel permutes them, experts stacked per block.
func (m *deepseek) Modify(in Input, bid int) ([]Output, error) {
	nHead, err := m.h.MustInt("num_attention_heads")
	if err != nil {
		return nil, err
	}
	var build func([][]float32) ([]float32, error)
	var order []int64
	switch {
	case strings.HasSuffix(in.Name, "q_proj.weight") || strings.HasSuffix(in.Name, "q_proj.bias"):
		build, order, err = permuteQK(in.Shape, nHead, nHead)
	case strings.HasSuffix(in.Name, "k_proj.weight") || strings.HasSuffix(in.Name, "k_proj.bias"):
		// hparams.get("num_key_value_heads"): None permutes by nHead.
		nKV, _, kerr := m.h.Int("num_key_value_heads")
		if kerr != nil {
			return nil, kerr
		}
		build, order, err = permuteQK(in.Shape, nHead, nKV)
	}
	if err != nil {
		return nil, fmt.Errorf("Q/K permutation: %w", err)
	}
	if strings.Contains(in.Name, "mlp.experts") {
		return m.experts.add(&m.text, in, bid, "n_routed_experts")
	}
	out, err := m.mapped(in, in.Name, bid, build)
	if err != nil {
		return nil, err
	}
	out[0].RowOrder = order
	return out, nil
}

func (m *deepseek) Finish() error { return m.experts.finish() }

// deepseek2Kind tells the classes built on DeepseekV2Model apart.
type deepseek2Kind int

const (
	deepseekV2  deepseek2Kind = iota // DeepseekV2Model (V2, V3)
	glm4MoeLite                      // Glm4MoeLiteModel (conversion/glm.py)
	mistral4                         // Mistral3Model.Mistral4Model (conversion/mistral3.py, see newMistral4)
)

// deepseek2 is DeepseekV2Model (conversion/deepseek.py, arch deepseek2)
// and its subclass Glm4MoeLiteModel (conversion/glm.py): multi-head latent
// attention (kv_b_proj split, see mlaKVB), routed experts stacked, shared
// experts, sigmoid routing with e_score_correction_bias, the
// multi-token-prediction layers past num_hidden_layers skipped (V2, V3) or
// kept as extra blocks (GLM-4.7-Flash). DeepseekV32Model is not here:
// under transformers 5.24 its set_vocab assertion fails on every
// checkpoint with a tokenizer.json (see docs/compat.md).
type deepseek2 struct {
	text
	kind    deepseek2Kind
	experts mlpExperts
	// mainLayers is num_hidden_layers; nextn the multi-token-prediction
	// layers kept after them (0: skipped, the converter's skip_mtp).
	mainLayers, nextn int
}

func newDeepseek2(kind deepseek2Kind) Constructor {
	return func(h HParams, dir string) (Model, error) {
		ggufArch := "deepseek2"
		if kind == mistral4 {
			ggufArch = "mistral4"
		}
		main, err := h.MustInt("num_hidden_layers")
		if err != nil {
			return nil, err
		}
		if main < 0 || main > 1<<16 {
			return nil, &ConfigError{Key: "num_hidden_layers", Value: h["num_hidden_layers"], Msg: "is not a block count"}
		}
		var nextn int64
		if kind == glm4MoeLite {
			// Glm4MoeLiteModel (without --no-mtp): block_count +=
			// hparams.get("num_nextn_predict_layers", 0).
			n, _, err := h.Int("num_nextn_predict_layers")
			if err != nil {
				return nil, err
			}
			if n < 0 || n > 1<<10 {
				return nil, &ConfigError{Key: "num_nextn_predict_layers", Value: h["num_nextn_predict_layers"], Msg: "is not a layer count"}
			}
			nextn = n
		}
		if kind == deepseekV2 && dir != "" && isFile(filepath.Join(dir, "tiktoken.model")) && !isFile(filepath.Join(dir, "tokenizer.json")) {
			// Kimi K2 (DeepseekV3ForCausalLM): set_vocab's fallback after
			// the gpt2 routine.
			return nil, &UnsupportedError{Arch: "Kimi K2 (DeepseekV3ForCausalLM with tiktoken.model)", Reason: kimiTiktoken}
		}
		hb := maps.Clone(h)
		hb["num_hidden_layers"] = jsonInt(main + nextn)
		t, err := newText(ggufArch, hb, dir)
		if err != nil {
			return nil, err
		}
		t.h = h
		return &deepseek2{text: t, kind: kind, mainLayers: int(main), nextn: int(nextn)}, nil
	}
}

// isFile reports whether path is a regular file.
func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// jsonInt is n as a decoded config.json integer.
func jsonInt(n int64) any { return json.Number(strconv.FormatInt(n, 10)) }

// Vocab is DeepseekV2Model.set_vocab: the gpt2 routine (Kimi K2's tiktoken
// vocabulary, its fallback, is refused by the constructor);
// Glm4MoeLiteModel's is _set_vocab_glm.
func (m *deepseek2) Vocab() VocabKind {
	if m.kind == glm4MoeLite {
		return VocabGLM
	}
	return VocabGPT2
}

// Filter is DeepseekV2Model.filter_tensors: the DeepSeek-OCR vision
// encoders dropped, then TextModel's filter.
func (m *deepseek2) Filter(name string) (string, bool) {
	if strings.Contains(name, "sam_model") || strings.Contains(name, "qwen2_model") {
		return "", false
	}
	return m.text.Filter(name)
}

// mtpLayer matches the converter's re.match(r"model.layers.(\d+)", name).
var mtpLayer = regexp.MustCompile(`^model.layers.(\d+)`)

// Params is DeepseekV2Model.set_gguf_parameters (and its subclasses').
func (m *deepseek2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	// MLA is written as MQA: one KV head (set before TextModel's
	// parameters), and rms_norm_eps defaults to 1e-6.
	h := maps.Clone(m.h)
	h["num_key_value_heads"] = jsonInt(1)
	if _, ok := h["rms_norm_eps"]; !ok {
		h["rms_norm_eps"] = json.Number("1e-06")
	}
	t := m.text
	t.h = h
	k, err := t.params(ft)
	if err != nil {
		return nil, err
	}
	_, hasMoE := h["n_routed_experts"]
	hasMoE = hasMoE && h["n_routed_experts"] != nil
	dense := h["first_k_dense_replace"]
	if dense == nil {
		dense = jsonInt(0)
		if !hasMoE {
			dense = h["num_hidden_layers"]
		}
	}
	if err := k.u32("leading_dense_block_count", dense); err != nil {
		return nil, err
	}
	if err := k.u32("vocab_size", required(h, "vocab_size")); err != nil {
		return nil, err
	}
	if v, ok := h["q_lora_rank"]; ok && v != nil {
		if err := k.u32("attention.q_lora_rank", v); err != nil {
			return nil, err
		}
	}
	rank := h["kv_lora_rank"]
	if _, ok := h["kv_lora_rank"]; !ok {
		rank = jsonInt(512)
	}
	kvRank, err := asInt(rank)
	if err != nil {
		return nil, &ConfigError{Key: "kv_lora_rank", Value: rank, Msg: "is not an integer"}
	}
	ropeDim, err := h.MustInt("qk_rope_head_dim")
	if err != nil {
		return nil, err
	}
	nope, err := h.MustInt("qk_nope_head_dim")
	if err != nil {
		return nil, err
	}
	if err := k.u32("attention.kv_lora_rank", kvRank); err != nil {
		return nil, err
	}
	if err := k.u32("attention.key_length", kvRank+ropeDim); err != nil {
		return nil, err
	}
	if err := k.u32("attention.value_length", kvRank); err != nil {
		return nil, err
	}
	if err := k.u32("attention.key_length_mla", nope+ropeDim); err != nil {
		return nil, err
	}
	if err := k.u32("attention.value_length_mla", required(h, "v_head_dim")); err != nil {
		return nil, err
	}
	ff, key, ok := h.Find("moe_intermediate_size", "intermediate_size")
	if !ok {
		return nil, fmt.Errorf("config.json: could not find any of %q", []string{"moe_intermediate_size", "intermediate_size"})
	}
	if err := k.u32("expert_feed_forward_length", ff); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if hasMoE {
		if err := k.u32("expert_count", h["n_routed_experts"]); err != nil {
			return nil, err
		}
	}
	shared, ok := h["n_shared_experts"]
	if !ok {
		shared = jsonInt(0)
	}
	if err := k.u32("expert_shared_count", shared); err != nil {
		return nil, err
	}
	if v, ok := h["routed_scaling_factor"]; ok && v != nil {
		if err := k.f32("expert_weights_scale", v); err != nil {
			return nil, err
		}
	}
	if v, ok := h["norm_topk_prob"]; ok && Truthy(v) {
		// add_expert_weights_norm(norm_topk_prob): a bool key.
		b, isBool := v.(bool)
		if !isBool {
			return nil, &ConfigError{Key: "norm_topk_prob", Value: v, Msg: "is not a boolean"}
		}
		k.l.Set(k.key("expert_weights_norm"), gguf.Bool(b))
	}
	if err := k.u32("rope.dimension_count", ropeDim); err != nil {
		return nil, err
	}
	if v, ok := m.rope["mscale_all_dim"]; ok && v != nil {
		f, err := asFloat(v)
		if err != nil {
			return nil, &ConfigError{Key: "mscale_all_dim", Value: v, Msg: "is not a number"}
		}
		if err := k.f32("rope.scaling.yarn_log_multiplier", 0.1*f); err != nil {
			return nil, err
		}
	}
	switch m.kind {
	case glm4MoeLite:
		if m.nextn > 0 {
			if err := k.u32("nextn_predict_layers", m.nextn); err != nil {
				return nil, err
			}
		}
	}
	return k.l.KVs(), nil
}

// Modify is DeepseekV2Model.modify_tensors: a tied lm_head dropped, the
// multi-token-prediction layers skipped (V2, V3), experts stacked,
// kv_b_proj split.
func (m *deepseek2) Modify(in Input, bid int) ([]Output, error) {
	return m.modify(in, in.Name, bid)
}

// modify is Modify for a tensor the subclass has renamed to name.
// Mistral4Model (skip_mtp and merge_expert off) neither skips layers past
// num_hidden_layers nor stacks experts: its fused expert tensors map as
// they are, and a per-expert one fails to map.
func (m *deepseek2) modify(in Input, name string, bid int) ([]Output, error) {
	if tied, _ := m.h.Bool("tie_word_embeddings"); tied && (name == "lm_head.weight" || name == "model.lm_head.weight") {
		return nil, nil
	}
	if m.nextn == 0 && m.kind != mistral4 {
		if sm := mtpLayer.FindStringSubmatch(name); sm != nil {
			if n, err := strconv.Atoi(sm[1]); err != nil || n >= m.mainLayers {
				return nil, nil
			}
		}
	}
	if strings.Contains(name, "mlp.experts") && m.kind != mistral4 {
		return m.experts.add(&m.text, in, bid, "n_routed_experts")
	}
	if strings.HasSuffix(name, "kv_b_proj.weight") {
		nkv, err := m.h.MustInt("num_key_value_heads")
		if err != nil {
			return nil, err
		}
		v, err := m.h.MustInt("v_head_dim")
		if err != nil {
			return nil, err
		}
		nope, err := m.h.MustInt("qk_nope_head_dim")
		if err != nil {
			return nil, err
		}
		return mlaKVB(&m.text, in, bid, nkv, nope, v)
	}
	return m.mapped(in, name, bid, nil)
}

func (m *deepseek2) Finish() error { return m.experts.finish() }
