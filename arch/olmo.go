package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newOlmo, "OlmoForCausalLM", "OLMoForCausalLM")
	register(newOlmo2, "Olmo2ForCausalLM", "Olmo3ForCausalLM")
}

// olmo is OlmoModel (conversion/olmo.py): TextModel's parameters with a
// fixed LayerNorm epsilon (its norms have no weights) and the QKV clamp;
// Q and K weights permuted as LlamaModel does.
type olmo struct{ text }

func newOlmo(h HParams, dir string) (Model, error) {
	t, err := newText("olmo", h, dir)
	return &olmo{t}, err
}

func (m *olmo) Vocab() VocabKind { return VocabGPT2 }

// Params appends, after general.file_type, the LayerNorm epsilon 1e-5
// and clip_qkv as attention.clamp_kqv when it is set.
func (m *olmo) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	if err := k.f32("attention.layer_norm_epsilon", olmoNormEps); err != nil {
		return nil, err
	}
	if v, ok := m.h["clip_qkv"]; ok && v != nil {
		if err := k.f32("attention.clamp_kqv", v); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// olmoNormEps is the epsilon OlmoModel writes (add_layer_norm_eps(1e-5)).
const olmoNormEps = 1e-5

// Modify permutes q_proj and k_proj weights (not biases, unlike
// LlamaModel) for llama.cpp's rotary layout.
func (m *olmo) Modify(in Input, bid int) ([]Output, error) {
	var build func([][]float32) ([]float32, error)
	if strings.HasSuffix(in.Name, "q_proj.weight") || strings.HasSuffix(in.Name, "k_proj.weight") {
		nHead, err := m.h.MustInt("num_attention_heads")
		if err != nil {
			return nil, err
		}
		nKV := nHead
		if strings.HasSuffix(in.Name, "k_proj.weight") {
			// num_key_value_heads None means the head count (permute's
			// n_head_kv None).
			n, ok, err := m.h.Int("num_key_value_heads")
			if err != nil {
				return nil, err
			}
			if ok && n <= 0 {
				return nil, &ConfigError{Key: "num_key_value_heads", Value: n, Msg: "is not a head count"}
			}
			if ok {
				nKV = n
			}
		}
		var order []int64
		if build, order, err = permuteQK(in.Shape, nHead, nKV); err != nil {
			return nil, fmt.Errorf("%s: Q/K permutation: %w", in.Name, err)
		}
		outs, err := m.mapped(in, in.Name, bid, build)
		if err == nil {
			outs[0].RowOrder = order
		}
		return outs, err
	}
	return m.mapped(in, in.Name, bid, build)
}

// olmo2 is Olmo2Model (conversion/olmo.py): TextModel's parameters and
// tensors, plus a sliding window when the hyperparameters have one.
type olmo2 struct{ text }

func newOlmo2(h HParams, dir string) (Model, error) {
	t, err := newText("olmo2", h, dir)
	return &olmo2{t}, err
}

func (m *olmo2) Vocab() VocabKind { return VocabGPT2 }

// Params adds, for a sliding_window key (Olmo2Config has no such field:
// only a config.json that names one), the window and the per-layer pattern:
// layer_types' sliding layers, else every layer but each 4th.
func (m *olmo2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	sw, ok := m.h["sliding_window"]
	if !ok {
		return k.l.KVs(), nil
	}
	if err := k.u32("attention.sliding_window", sw); err != nil {
		return nil, err
	}
	var pattern []bool
	if v, ok := m.h["layer_types"]; ok {
		types, isList := v.([]any)
		if !isList {
			return nil, &ConfigError{Key: "layer_types", Value: v, Msg: "is not a list"}
		}
		for _, t := range types {
			pattern = append(pattern, t == "sliding_attention")
		}
	} else {
		n, err := m.h.MustInt("num_hidden_layers")
		if err != nil {
			return nil, err
		}
		if n < 0 || n > 1<<16 {
			return nil, &ConfigError{Key: "num_hidden_layers", Value: n, Msg: "is not a block count"}
		}
		for i := range n {
			pattern = append(pattern, (i+1)%4 != 0)
		}
	}
	k.l.Set(k.key("attention.sliding_window_pattern"), gguf.Array(pattern))
	return k.l.KVs(), nil
}

func (m *olmo2) Modify(in Input, bid int) ([]Output, error) { return m.mapped(in, in.Name, bid, nil) }
