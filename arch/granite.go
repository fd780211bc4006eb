package arch

import (
	"fmt"
	"maps"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newGranite, "GraniteForCausalLM")
	register(newSmolLM3, "SmolLM3ForCausalLM")
}

// newSmolLM3 is SmolLM3Model (conversion/llama.py): LlamaModel under the
// smollm3 architecture (its NoPE layers are llama.cpp's own knowledge, not
// metadata).
func newSmolLM3(h HParams, dir string) (Model, error) { return newLlamaArch("smollm3", h, dir) }

// granite is GraniteModel (conversion/granite.py): LlamaModel without
// head_dim, with the multipliers as scales.
type granite struct{ *llama }

func newGranite(h HParams, dir string) (Model, error) {
	for _, key := range []string{"spatial_target_layers", "deepstack_layer_map"} {
		if v, ok := h[key]; ok && Truthy(v) {
			return nil, fmt.Errorf("arch: Granite 4 Vision models (%s) are not supported", key)
		}
	}
	l, err := newLlamaArch("granite", h, dir)
	if err != nil {
		return nil, err
	}
	return &granite{l}, nil
}

// graniteScales maps Granite's hyperparameters to their GGUF keys, in the
// converter's order.
var graniteScales = []struct{ key, suffix string }{
	{"attention_multiplier", "attention.scale"},
	{"embedding_multiplier", "embedding_scale"},
	{"residual_multiplier", "residual_scale"},
	{"logits_scaling", "logit_scale"},
}

// Params is GraniteModel.set_gguf_parameters: head_dim is dropped from the
// hyperparameters first (no key_length/value_length; rope dimensions from
// hidden_size / num_attention_heads), then every multiplier that is set
// and not zero is written.
func (m *granite) Params(ft gguf.FileType) ([]gguf.KV, error) {
	noHeadDim := *m.llama
	noHeadDim.h = maps.Clone(m.h)
	delete(noHeadDim.h, "head_dim")
	kvs, err := noHeadDim.Params(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	for _, s := range graniteScales {
		if v, ok := m.h[s.key]; ok && Truthy(v) {
			if err := k.f32(s.suffix, v); err != nil {
				return nil, err
			}
		}
	}
	return k.l.KVs(), nil
}

// Filter is GraniteModel.filter_tensors: Granite Vision's encoder and
// projector tensors are dropped.
func (m *granite) Filter(name string) (string, bool) {
	if strings.HasPrefix(name, "encoder.") || strings.Contains(name, "image_") ||
		strings.Contains(name, "layerwise_projectors") || strings.Contains(name, "spatial_projectors") {
		return "", false
	}
	return m.llama.Filter(name)
}

// Truthy is Python's truth value of a decoded JSON value: false for null,
// false, 0, "" and an empty list or object.
func Truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	f, err := asFloat(v)
	return err != nil || f != 0
}
