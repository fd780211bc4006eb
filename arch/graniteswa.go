package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newGraniteSWA(false), "GraniteSWAForCausalLM")
	register(newGraniteSWA(true), "GraniteMoeSWAForCausalLM")
	// GraniteSWAConfig / GraniteMoeSWAConfig.__post_init__: layer_types
	// with every 4th layer (from the first) full when None,
	// num_key_value_heads = num_attention_heads when None.
	for _, mt := range []string{"granite_swa", "granitemoe_swa"} {
		derivedKeys[mt] = append(derivedKeys[mt], deriveGraniteSWALayerTypes, deriveKVHeads)
	}
}

// graniteSWAPeriod is GraniteSWAConfig's and the converter's default
// pattern: layer i is full attention when i % 4 == 0, sliding otherwise.
const graniteSWAPeriod = 4

func deriveGraniteSWALayerTypes(h HParams) {
	if !unset(h, "layer_types") {
		return
	}
	n, err := asInt(h["num_hidden_layers"])
	if err != nil || !isInt(h["num_hidden_layers"]) || n < 0 || n > 1<<16 {
		return
	}
	types := make([]any, n)
	for i := range n {
		types[i] = "sliding_attention"
		if i%graniteSWAPeriod == 0 {
			types[i] = "full_attention"
		}
	}
	h["layer_types"] = types
}

// graniteSWA is GraniteSWAModel and GraniteMoeSWAModel
// (conversion/granite.py), GGUF arch granite_swa: GraniteModel with
// attention sinks, interleaved sliding-window attention and an optional
// per-layer rope pattern; the MoE variant keeps its experts' gate and up
// fused, and its shared expert's.
type graniteSWA struct {
	*granite
	moe bool
}

func newGraniteSWA(moe bool) Constructor {
	return func(h HParams, dir string) (Model, error) {
		g, err := newGranite(h, dir)
		if err != nil {
			return nil, err
		}
		gr := g.(*granite)
		gr.arch = "granite_swa"
		if gr.names, err = NewNameMap("granite_swa", gr.blocks); err != nil {
			return nil, err
		}
		return &graniteSWA{granite: gr, moe: moe}, nil
	}
}

// Filter is GraniteSWAModel.filter_tensors: a sinks parameter gets the
// .weight suffix its GGUF name needs.
func (m *graniteSWA) Filter(name string) (string, bool) {
	if strings.HasSuffix(name, "sinks") {
		name += ".weight"
	}
	return m.granite.Filter(name)
}

// Params is GraniteSWAModel.set_gguf_parameters: GraniteModel's, the
// sliding window (128 when unset), the sliding-window pattern (from
// layer_types, else every 4th layer full), the rope pattern from
// no_rope_layers when set; GraniteMoeSWAModel adds
// shared_intermediate_size when set and not zero.
func (m *graniteSWA) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.granite.Params(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	sw, ok := m.h["sliding_window"]
	if !ok {
		sw = 128
	}
	if err := k.u32("attention.sliding_window", sw); err != nil {
		return nil, err
	}
	var pattern []bool
	if v := m.h["layer_types"]; Truthy(v) {
		list, isList := v.([]any)
		if !isList {
			return nil, &ConfigError{Key: "layer_types", Value: v, Msg: "is not a list"}
		}
		for _, t := range list {
			pattern = append(pattern, t == "sliding_attention")
		}
	} else {
		for i := range m.blocks {
			pattern = append(pattern, i%graniteSWAPeriod != 0)
		}
	}
	k.l.Set(k.key("attention.sliding_window_pattern"), gguf.Array(pattern))
	if v := m.h["no_rope_layers"]; Truthy(v) {
		list, isList := v.([]any)
		if !isList {
			return nil, &ConfigError{Key: "no_rope_layers", Value: v, Msg: "is not a list"}
		}
		rope := make([]bool, len(list))
		for i, x := range list {
			rope[i] = Truthy(x)
		}
		k.l.Set(k.key("attention.rope_pattern"), gguf.Array(rope))
	}
	if v := m.h["shared_intermediate_size"]; m.moe && Truthy(v) {
		if err := k.u32("expert_shared_feed_forward_length", v); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// Modify is GraniteMoeSWAModel.modify_tensors: the routed experts' fused
// gate and up (experts.gate_up_proj, or Granite's input_linear; 2 ×
// intermediate_size rows) become ffn_gate_up_exps, experts.down_proj
// ffn_down_exps, the shared expert's input_linear (2 ×
// shared_intermediate_size rows, intermediate_size when unset)
// ffn_up_shexp and its output_linear ffn_down_shexp; everything else (and
// all of GraniteSWAModel's) as GraniteModel.
func (m *graniteSWA) Modify(in Input, bid int) ([]Output, error) {
	if !m.moe {
		return m.granite.Modify(in, bid)
	}
	var part, rowsKey string
	switch {
	case strings.HasSuffix(in.Name, "block_sparse_moe.experts.gate_up_proj"),
		strings.HasSuffix(in.Name, "block_sparse_moe.input_linear.weight"):
		part, rowsKey = "ffn_gate_up_exps", "intermediate_size"
	case strings.HasSuffix(in.Name, "block_sparse_moe.experts.down_proj"):
		part = "ffn_down_exps"
	case strings.HasSuffix(in.Name, "shared_mlp.input_linear.weight"):
		part, rowsKey = "ffn_up_shexp", "shared_intermediate_size"
		if _, ok := m.h[rowsKey]; !ok {
			rowsKey = "intermediate_size"
		}
	case strings.HasSuffix(in.Name, "shared_mlp.output_linear.weight"):
		part = "ffn_down_shexp"
	default:
		return m.granite.Modify(in, bid)
	}
	if rowsKey != "" {
		ffn, err := m.h.MustInt(rowsKey)
		if err != nil {
			return nil, err
		}
		if s := in.Shape; len(s) < 2 || s[len(s)-2] != 2*ffn {
			return nil, fmt.Errorf("%s: shape %v, want 2 × %s (%d) rows", in.Name, s, rowsKey, ffn)
		}
	}
	return m.split(in, bid, nil, part)
}
