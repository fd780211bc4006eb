package arch

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newMellum, "MellumForCausalLM")
	// MellumConfig.__post_init__: every layer full attention when
	// layer_types is None, and its two default rope bases.
	derivedKeys["mellum"] = append(derivedKeys["mellum"], deriveMellum)
}

func deriveMellum(h HParams) {
	n, err := asInt(h["num_hidden_layers"])
	if unset(h, "layer_types") && err == nil && isInt(h["num_hidden_layers"]) && n >= 0 && n <= 1<<16 {
		types := make([]any, n)
		for i := range types {
			types[i] = "full_attention"
		}
		h["layer_types"] = types
	}
	if unset(h, "rope_parameters") {
		h["rope_parameters"] = map[string]any{
			"full_attention":    map[string]any{"rope_type": "default", "rope_theta": 500000.0},
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 10000.0},
		}
	}
}

// mellum is MellumModel (conversion/mellum.py): TextModel's tensors with
// every "experts" tensor stacked per block, the expert FFN length and
// interleaved sliding-window attention.
type mellum struct{ *qwenMoe }

func newMellum(h HParams, dir string) (Model, error) {
	m, err := newQwenMoe("mellum")(h, dir)
	if err != nil {
		return nil, err
	}
	return &mellum{m.(*qwenMoe)}, nil
}

func (m *mellum) Vocab() VocabKind { return VocabGPT2 }

// Params is MellumModel.set_gguf_parameters: TextModel's keys, the expert
// FFN length, and, when use_sliding_window is true or unset and
// sliding_window is set, the window and the per-layer pattern from
// layer_types.
func (m *mellum) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	if v := m.h["moe_intermediate_size"]; v != nil {
		if err := k.u32("expert_feed_forward_length", v); err != nil {
			return nil, err
		}
	}
	use, sw := m.h["use_sliding_window"], m.h["sliding_window"]
	if (use == true || use == nil) && sw != nil {
		if err := k.u32("attention.sliding_window", sw); err != nil {
			return nil, err
		}
		v, ok := m.h["layer_types"]
		list, isList := v.([]any)
		if !ok || !isList {
			return nil, &ConfigError{Key: "layer_types", Value: v, Msg: "is not a list"}
		}
		pattern := make([]bool, len(list))
		for i, t := range list {
			pattern[i] = t == "sliding_attention"
		}
		k.l.Set(k.key("attention.sliding_window_pattern"), gguf.Array(pattern))
	}
	return k.l.KVs(), nil
}

// Modify is MellumModel.modify_tensors: a tensor whose name has "experts"
// waits for its block's other experts and is stacked, the rest maps.
func (m *mellum) Modify(in Input, bid int) ([]Output, error) {
	if strings.Contains(in.Name, "experts") {
		return m.stack(in, bid)
	}
	return m.mapped(in, in.Name, bid, nil)
}
