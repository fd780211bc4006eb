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
