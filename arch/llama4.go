package arch

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newLlama4, "Llama4ForConditionalGeneration", "Llama4ForCausalLM")
	// Llama4TextConfig.__post_init__: num_key_value_heads, head_dim and
	// layer_types (from no_rope_layers and attention_chunk_size).
	derivedKeys["llama4_text"] = append(derivedKeys["llama4_text"], deriveKVHeads, deriveHeadDim, deriveLlama4LayerTypes)
}

// llama4 is Llama4Model (conversion/llama.py): LlamaModel under the llama4
// architecture without the Q/K permutation, the GPT-2 vocabulary, the MoE
// interleave step and expert FFN length, and transformers' fused expert
// tensors (gate_up_proj, down_proj stored [experts, in, out]) transposed
// to llama.cpp's [experts, out, in].
type llama4 struct{ *llama }

func newLlama4(h HParams, dir string) (Model, error) {
	// Llama4Model.__init__: intermediate_size is the experts' length and
	// intermediate_size_mlp the dense FFN's; the converter swaps them so
	// that TextModel writes the dense one as feed_forward_length.
	if !h.Has("intermediate_size") || !h.Has("intermediate_size_mlp") {
		return nil, fmt.Errorf("config.json: Llama 4 needs intermediate_size and intermediate_size_mlp")
	}
	h = maps.Clone(h)
	h["intermediate_size_moe"] = h["intermediate_size"]
	h["intermediate_size"] = h["intermediate_size_mlp"]
	l, err := newLlamaArch("llama4", h, dir)
	if err != nil {
		return nil, err
	}
	l.noPermute = true
	return &llama4{l}, nil
}

// Vocab: Llama4Model.set_vocab is _set_vocab_gpt2.
func (m *llama4) Vocab() VocabKind { return VocabGPT2 }

// Params is Llama4Model.set_gguf_parameters: LlamaModel's, the MoE
// interleave step, the experts' FFN length, and a sliding window of 0 when
// every layer is full attention (no chunked attention).
func (m *llama4) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.llama.Params(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	step, ok := m.h["interleave_moe_layer_step"]
	if !ok {
		return nil, fmt.Errorf("config.json: Llama 4 needs interleave_moe_layer_step")
	}
	if err := k.u32("interleave_moe_layer_step", step); err != nil {
		return nil, err
	}
	if err := k.u32("expert_feed_forward_length", m.h["intermediate_size_moe"]); err != nil {
		return nil, err
	}
	if lt, ok := m.h["layer_types"]; ok {
		list, isList := lt.([]any)
		if !isList && lt != nil {
			return nil, &ConfigError{Key: "layer_types", Value: lt, Msg: "is not a list"}
		}
		all := true
		for _, t := range list {
			all = all && t == "full_attention"
		}
		// Python's all() of an empty list (or None, which the converter
		// would fail to iterate; transformers always derives a list) is true.
		if lt != nil && all {
			if err := k.u32("attention.sliding_window", 0); err != nil {
				return nil, err
			}
		}
	}
	return k.l.KVs(), nil
}

// Modify is Llama4Model.modify_tensors: feed_forward.experts.gate_up_proj
// ([experts, n_embd, 2·n_ff]) is transposed and split into gate (first
// half) and up; feed_forward.experts.down_proj is transposed; the rest is
// LlamaModel's.
func (m *llama4) Modify(in Input, bid int) ([]Output, error) {
	switch {
	case strings.Contains(in.Name, "gate_up_proj"):
		s := in.Shape
		if len(s) != 3 || s[2]%2 != 0 {
			return nil, fmt.Errorf("fused gate_up_proj of shape %v, want [experts, n_embd, 2·n_ff]", s)
		}
		var outs []Output
		for half, part := range []string{"gate_proj.weight", "up_proj.weight"} {
			name := strings.Replace(in.Name, "gate_up_proj", part, 1)
			o, err := m.llama.Modify(Input{Name: name, Source: in.Source, Shape: s, DType: in.DType}, bid)
			if err != nil {
				return nil, err
			}
			for i := range o {
				o[i].Shape = []int64{s[0], s[2] / 2, s[1]}
				o[i].Build = transposeHalf(s, half)
				o[i].RowOrder = nil
			}
			outs = append(outs, o...)
		}
		return outs, nil
	case strings.HasSuffix(in.Name, "down_proj"):
		s := in.Shape
		if len(s) != 3 {
			return nil, fmt.Errorf("fused down_proj of shape %v, want [experts, n_ff, n_embd]", s)
		}
		o, err := m.llama.Modify(Input{Name: in.Name + ".weight", Source: in.Source, Shape: s, DType: in.DType}, bid)
		if err != nil {
			return nil, err
		}
		for i := range o {
			o[i].Shape = []int64{s[0], s[2], s[1]}
			o[i].Build = transposeHalf(s, -1)
			o[i].RowOrder = nil
		}
		return o, nil
	}
	return m.llama.Modify(in, bid)
}

// transposeHalf is transpose(-1, -2) of a 3-D tensor [a, r, c], then (half
// 0 or 1) the first or second half of the new dimension -2 (split(c/2,
// dim=-2)); half -1 keeps all of it.
func transposeHalf(shape []int64, half int) func([][]float32) ([]float32, error) {
	a, r, c := shape[0], shape[1], shape[2]
	c0, n := int64(0), c
	if half >= 0 {
		n = c / 2
		c0 = int64(half) * n
	}
	return func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		if int64(len(src)) != a*r*c {
			return nil, fmt.Errorf("transpose: %d values for shape %v", len(src), shape)
		}
		dst := make([]float32, a*n*r)
		for e := range a {
			for j := range n {
				for i := range r {
					dst[(e*n+j)*r+i] = src[(e*r+i)*c+c0+j]
				}
			}
		}
		return dst, nil
	}
}

// deriveLlama4LayerTypes is Llama4TextConfig.__post_init__'s layer_types:
// without one, a layer is chunked attention when it uses rope
// (no_rope_layers, by default every layer but each no_rope_layer_interval-th)
// and attention_chunk_size is set, else full attention.
func deriveLlama4LayerTypes(h HParams) {
	if !unset(h, "layer_types") {
		return
	}
	n, err := asInt(h["num_hidden_layers"])
	if err != nil || n < 0 || n > 1<<16 {
		return
	}
	noRope, _ := h["no_rope_layers"].([]any)
	if len(noRope) == 0 {
		interval, err := asInt(h["no_rope_layer_interval"])
		if err != nil || interval == 0 {
			return
		}
		noRope = make([]any, n)
		for i := range n {
			v := int64(0)
			if (i+1)%interval != 0 {
				v = 1
			}
			noRope[i] = json.Number(fmt.Sprint(v))
		}
		h["no_rope_layers"] = noRope
	}
	chunked := !unset(h, "attention_chunk_size")
	types := make([]any, len(noRope))
	for i, v := range noRope {
		if Truthy(v) && chunked {
			types[i] = "chunked_attention"
		} else {
			types[i] = "full_attention"
		}
	}
	h["layer_types"] = types
}
