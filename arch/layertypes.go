package arch

import (
	"fmt"
	"slices"
)

// Helpers for hybrid models whose blocks are not all attention blocks
// (LFM2's short convolutions, Qwen3-Next's and Qwen3.5's gated delta net
// linear attention): the per-layer type list of config.json and the
// causal-convolution weights these blocks carry.

// layerTypes is config.json's layer_types as strings, which must have one
// entry per block.
func layerTypes(h HParams, blocks int) ([]string, error) {
	v := h["layer_types"]
	list, ok := v.([]any)
	if !ok {
		return nil, &ConfigError{Key: "layer_types", Value: v, Msg: "is not a list of layer types"}
	}
	if len(list) != blocks {
		return nil, &ConfigError{Key: "layer_types", Value: v, Msg: fmt.Sprintf("has %d entries for %d blocks", len(list), blocks)}
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, &ConfigError{Key: fmt.Sprintf("layer_types[%d]", i), Value: e, Msg: "is not a layer type name"}
		}
		out[i] = s
	}
	return out, nil
}

// perLayerKVHeads is the list the LFM2 classes put in place of
// num_key_value_heads before TextModel writes it: the config's count on
// the layers attn says are attention layers, 0 on the others.
func perLayerKVHeads(h HParams, types []string, attn func(string) bool) ([]any, error) {
	kv, ok := h["num_key_value_heads"]
	if !ok {
		return nil, &ConfigError{Key: "num_key_value_heads", Value: nil, Msg: "is missing"}
	}
	out := make([]any, len(types))
	for i, t := range types {
		out[i] = 0
		if attn(t) {
			out[i] = kv
		}
	}
	return out, nil
}

// squeezeDim is torch's squeeze(dim): the shape without dimension dim
// when that has size 1, else unchanged; dim past the rank is torch's
// IndexError.
func squeezeDim(shape []int64, dim int) ([]int64, error) {
	if dim >= len(shape) {
		return nil, fmt.Errorf("squeeze(%d) of a %d-D tensor %v", dim, len(shape), shape)
	}
	if shape[dim] != 1 {
		return slices.Clone(shape), nil
	}
	return slices.Delete(slices.Clone(shape), dim, dim+1), nil
}

// squeezeAll is torch's squeeze(): the shape without its size-1
// dimensions.
func squeezeAll(shape []int64) []int64 {
	out := make([]int64, 0, len(shape))
	for _, d := range shape {
		if d != 1 {
			out = append(out, d)
		}
	}
	return out
}

// deriveIntervalLayerTypes is the __post_init__ of Qwen3NextConfig,
// Qwen3_5TextConfig and Qwen3_5MoeTextConfig: without layer_types, every
// full_attention_interval-th layer (default 4) is "full_attention" and
// the others "linear_attention"; full_attention_interval is popped from
// the kwargs then, so AutoConfig's dictionary no longer has it.
func deriveIntervalLayerTypes(h HParams) {
	if !unset(h, "layer_types") {
		return
	}
	n, err := asInt(h["num_hidden_layers"])
	if err != nil || !isInt(h["num_hidden_layers"]) || n < 0 || n > 1<<16 {
		return
	}
	interval := int64(4)
	if v, ok := h["full_attention_interval"]; ok {
		iv, err := asInt(v)
		if err != nil || !isInt(v) || iv <= 0 {
			// Python's modulo by it would fail or differ: leave the
			// config as it is, for the plugin to refuse.
			return
		}
		interval = iv
	}
	types := make([]any, n)
	for i := range n {
		types[i] = "full_attention"
		if (i+1)%interval != 0 {
			types[i] = "linear_attention"
		}
	}
	h["layer_types"] = types
	delete(h, "full_attention_interval")
}

// recurrentLayers is the per-block flag list of the gated-delta-net
// hybrids (Qwen3NextModel.set_gguf_parameters): true for the
// "linear_attention" layers, false for the others and for the extra
// (MTP) blocks past the config's layers.
func recurrentLayers(types []string, blocks int) []bool {
	out := make([]bool, blocks)
	for i, t := range types {
		out[i] = t == "linear_attention"
	}
	return out
}

// vHeadOrder is _LinearAttentionVReorderBase._reorder_v_heads as a
// permutation of n = nK·perK·dim positions: the heads grouped by key head
// (key head i, its value heads j) become tiled (value head j of every key
// head i in turn); out[p] is the source position of output position p.
func vHeadOrder(nK, perK, dim int64) []int64 {
	order := make([]int64, nK*perK*dim)
	for j := range perK {
		for i := range nK {
			for d := range dim {
				order[(j*nK+i)*dim+d] = (i*perK+j)*dim + d
			}
		}
	}
	return order
}

// slidingPattern is the converter's [t == "sliding_attention" for t in
// layer_types]: the attention.sliding_window_pattern array.
func slidingPattern(types []string) []bool {
	swa := make([]bool, len(types))
	for i, t := range types {
		swa[i] = t == "sliding_attention"
	}
	return swa
}
