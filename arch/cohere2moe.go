package arch

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newCohere2Moe, "Cohere2MoeForCausalLM")
}

// cohere2Moe is Cohere2MoeModel (conversion/command_r.py): TextModel's
// parameters with the logit scale, the per-layer sliding-window pattern,
// the leading dense blocks and the expert widths; zero biases left out as
// Cohere2Model does, per-expert MLPs stacked per block. Checkpoints with
// multi-token-prediction blocks (num_nextn_predict_layers) are refused.
type cohere2Moe struct {
	text
	experts mlpExperts
}

func newCohere2Moe(h HParams, dir string) (Model, error) {
	if n, _, err := h.Int("num_nextn_predict_layers"); err != nil || n > 0 {
		return nil, &ConfigError{Key: "num_nextn_predict_layers", Value: h["num_nextn_predict_layers"], Msg: "asks for multi-token-prediction blocks, which are not converted"}
	}
	t, err := newText("cohere2moe", h, dir)
	if err != nil {
		return nil, err
	}
	return &cohere2Moe{text: t}, nil
}

func (m *cohere2Moe) Vocab() VocabKind { return VocabGPT2 }

// typeList is hparams[key] as a list of strings.
func (m *cohere2Moe) typeList(key string) ([]string, error) {
	list, ok := m.h[key].([]any)
	if !ok {
		return nil, &ConfigError{Key: key, Value: m.h[key], Msg: "is not a list"}
	}
	out := make([]string, len(list))
	for i, v := range list {
		if out[i], ok = v.(string); !ok {
			return nil, &ConfigError{Key: key, Value: m.h[key], Msg: "is not a list of strings"}
		}
	}
	return out, nil
}

// Params is Cohere2MoeModel.set_gguf_parameters.
func (m *cohere2Moe) Params(ft gguf.FileType) ([]gguf.KV, error) {
	ffn, ok := m.h["intermediate_size"]
	if !ok {
		return nil, &ConfigError{Key: "intermediate_size", Value: nil, Msg: "is missing"}
	}
	dense := m.h.get("first_k_dense_replace", 0)
	if _, ok := m.h["mlp_layer_types"]; ok && m.h["mlp_layer_types"] != nil {
		types, err := m.typeList("mlp_layer_types")
		if err != nil {
			return nil, err
		}
		n := len(types)
		for i, t := range types {
			if t != "dense" {
				n = i
				break
			}
		}
		dense = int64(n)
	}
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	for _, e := range []struct{ key, suffix string }{{"logit_scale", "logit_scale"}, {"sliding_window", "attention.sliding_window"}} {
		v, ok := m.h[e.key]
		if !ok {
			return nil, &ConfigError{Key: e.key, Value: nil, Msg: "is missing"}
		}
		add := k.u32
		if e.key == "logit_scale" {
			add = k.f32
		}
		if err := add(e.suffix, v); err != nil {
			return nil, err
		}
	}
	types, err := m.typeList("layer_types")
	if err != nil {
		return nil, err
	}
	pattern := make([]bool, len(types))
	for i, t := range types {
		pattern[i] = t == "sliding_attention"
	}
	k.l.Set(k.key("attention.sliding_window_pattern"), gguf.Array(pattern))
	if err := k.u32("vocab_size", m.h["vocab_size"]); err != nil {
		return nil, err
	}
	if err := k.u32OrArray("expert_feed_forward_length", ffn); err != nil {
		return nil, err
	}
	if err := k.u32("leading_dense_block_count", dense); err != nil {
		return nil, err
	}
	// add_bool packs with struct's "?", which takes any value's truth.
	k.l.Set(k.key("expert_weights_norm"), gguf.Bool(Truthy(m.h.get("norm_topk_prob", false))))
	shared, err := asInt(m.h.get("num_shared_experts", 0))
	if err != nil {
		return nil, &ConfigError{Key: "num_shared_experts", Value: m.h["num_shared_experts"], Msg: "is not an integer"}
	}
	if shared > 0 {
		if s := m.h.get("shared_expert_combination_strategy", "average"); s != "average" {
			return nil, &ConfigError{Key: "shared_expert_combination_strategy", Value: s, Msg: "is not \"average\", the only one Cohere2 MoE conversion supports"}
		}
		width, err := asInt(ffn)
		if err != nil {
			return nil, &ConfigError{Key: "intermediate_size", Value: ffn, Msg: "is not an integer"}
		}
		if err := k.u32("expert_shared_count", shared); err != nil {
			return nil, err
		}
		if err := k.u32("expert_shared_feed_forward_length", width*shared); err != nil {
			return nil, err
		}
	}
	if err := k.u32("rope.dimension_count", m.h["head_dim"]); err != nil {
		return nil, err
	}
	k.l.Set(k.key("rope.scaling.type"), gguf.String("none")) // RopeScalingType.NONE
	return k.l.KVs(), nil
}

var cohere2MoeExpert = regexp.MustCompile(`^model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(down_proj|gate_proj|up_proj)\.weight$`)

// Modify is Cohere2MoeModel.modify_tensors: biases are checked to be zero
// and left out, expert tensors held until their block is complete.
func (m *cohere2Moe) Modify(in Input, bid int) ([]Output, error) {
	switch {
	case strings.HasSuffix(in.Name, ".bias"):
		out := identity(in, "", bid)
		out.DropIfZero = true
		return []Output{out}, nil
	case cohere2MoeExpert.MatchString(in.Name):
		if sub := cohere2MoeExpert.FindStringSubmatch(in.Name); sub[1] != fmt.Sprint(bid) {
			return nil, fmt.Errorf("%s: expert tensor of block %s read as block %d", in.Name, sub[1], bid)
		}
		return m.experts.add(&m.text, in, bid, "num_experts")
	}
	return m.mapped(in, in.Name, bid, nil)
}

func (m *cohere2Moe) Finish() error { return m.experts.finish() }
