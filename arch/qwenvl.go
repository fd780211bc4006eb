package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newQwen2VL, "Qwen2VLModel", "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
		"Qwen2_5OmniModel")
	register(newQwen3VL, "Qwen3VLForConditionalGeneration")
	register(newQwen3VLMoe, "Qwen3VLMoeForConditionalGeneration")
}

// The text towers of the Qwen vision-language checkpoints: the converter
// writes the language model only (its vision tower goes to a separate
// mmproj file, which ggufkit does not make), dropping the vision tensors
// by TextModel's multimodal filter.

// qwen2VL is Qwen2VLModel (conversion/qwenvl.py): TextModel unchanged
// under the qwen2vl architecture (mrope sections from the rope
// parameters), Qwen2Model's vocabulary routine, Qwen2.5-Omni's "thinker."
// prefix removed.
type qwen2VL struct {
	text
}

func newQwen2VL(h HParams, dir string) (Model, error) {
	t, err := newText("qwen2vl", h, dir)
	if err != nil {
		return nil, err
	}
	return &qwen2VL{text: t}, nil
}

func (m *qwen2VL) Vocab() VocabKind { return VocabQwen2 }

func (m *qwen2VL) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Filter is Qwen2VLModel.filter_tensors: a leading "thinker." removed.
func (m *qwen2VL) Filter(name string) (string, bool) {
	if strings.HasPrefix(name, "thinker.") {
		name = strings.ReplaceAll(name, "thinker.", "")
	}
	return m.text.Filter(name)
}

func (m *qwen2VL) Modify(in Input, bid int) ([]Output, error) { return m.mapped(in, in.Name, bid, nil) }

// qwen3VL is Qwen3VLTextModel (conversion/qwen3vl.py): Qwen3Model under
// the qwen3vl architecture plus the deepstack layer count.
type qwen3VL struct {
	qwen2
}

func newQwen3VL(h HParams, dir string) (Model, error) {
	t, err := newText("qwen3vl", h, dir)
	if err != nil {
		return nil, err
	}
	return &qwen3VL{qwen2{text: t}}, nil
}

// Params is Qwen3VLTextModel.set_gguf_parameters: Qwen3Model's, then
// n_deepstack_layers.
func (m *qwen3VL) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	if err := m.setPooling(k, m.dir); err != nil {
		return nil, err
	}
	if err := addDeepstack(k, m.h, true); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Filter is Qwen3VLTextModel.filter_tensors: every "thinker." removed.
func (m *qwen3VL) Filter(name string) (string, bool) {
	return m.text.Filter(strings.ReplaceAll(name, "thinker.", ""))
}

// defaultDeepstackIndexes is Qwen3VLVisionConfig's (and
// Qwen3VLMoeVisionConfig's) deepstack_visual_indexes default in
// transformers 5.24.0: AutoConfig gives a vision_config without the key,
// or without a vision_config at all, this list.
var defaultDeepstackIndexes = []any{8, 16, 24}

// addDeepstack writes n_deepstack_layers, the length of
// vision_config.deepstack_visual_indexes (thinker_config.vision_config
// first when thinker is set and the config has one, as Qwen3VLTextModel
// looks).
func addDeepstack(k *kv, h HParams, thinker bool) error {
	var vc any
	var ok bool
	key := "vision_config"
	if tc, isMap := h["thinker_config"].(map[string]any); thinker && isMap {
		vc, ok = tc["vision_config"]
		key = "thinker_config.vision_config"
	} else if thinker && h.Has("thinker_config") {
		return &ConfigError{Key: "thinker_config", Value: h["thinker_config"], Msg: "is not an object"}
	} else {
		vc, ok = h["vision_config"]
	}
	idx := defaultDeepstackIndexes
	if ok && vc != nil {
		m, isMap := vc.(map[string]any)
		if !isMap {
			return &ConfigError{Key: key, Value: vc, Msg: "is not an object"}
		}
		if v, has := m["deepstack_visual_indexes"]; has {
			list, isList := v.([]any)
			if !isList {
				return &ConfigError{Key: key + ".deepstack_visual_indexes", Value: v, Msg: "is not a list"}
			}
			idx = list
		}
	}
	return k.u32("n_deepstack_layers", len(idx))
}

// qwen3VLMoe is Qwen3VLMoeTextModel (conversion/qwen3vl.py): Qwen3MoeModel
// under the qwen3vlmoe architecture, whose fused expert tensors are stored
// transposed ([experts, n_embd, 2·n_ff] and [experts, n_ff, n_embd]) and
// permuted back, plus the deepstack layer count.
type qwen3VLMoe struct {
	qwenMoe
}

func newQwen3VLMoe(h HParams, dir string) (Model, error) {
	t, err := newText("qwen3vlmoe", h, dir)
	if err != nil {
		return nil, err
	}
	return &qwen3VLMoe{qwenMoe{text: t}}, nil
}

func (m *qwen3VLMoe) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.moeParams(ft)
	if err != nil {
		return nil, err
	}
	if err := addDeepstack(k, m.h, false); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Filter is Qwen3VLMoeTextModel.filter_tensors: every "thinker." removed.
func (m *qwen3VLMoe) Filter(name string) (string, bool) {
	return m.text.Filter(strings.ReplaceAll(name, "thinker.", ""))
}

// Modify is Qwen3VLMoeTextModel.modify_tensors: down_proj [experts, n_ff,
// n_embd] permuted to [experts, n_embd, n_ff]; gate_up_proj [experts,
// n_embd, 2·n_ff] split along its last dimension, each half permuted to
// [experts, n_ff, n_embd]; everything else as Qwen3MoeModel.
func (m *qwen3VLMoe) Modify(in Input, bid int) ([]Output, error) {
	name := in.Name
	s := in.Shape
	switch {
	case strings.HasSuffix(name, "mlp.experts.down_proj") || strings.HasSuffix(name, "mlp.experts.down_proj.weight"):
		if len(s) != 3 {
			return nil, fmt.Errorf("tensor %q: fused down_proj of shape %v, want 3-D", name, s)
		}
		if !strings.HasSuffix(name, ".weight") {
			name += ".weight"
		}
		out, err := m.mapped(in, name, bid, swapLast2(s, 0, s[2]))
		if err != nil {
			return nil, err
		}
		out[0].Shape = []int64{s[0], s[2], s[1]}
		return out, nil
	case strings.HasSuffix(name, "mlp.experts.gate_up_proj") || strings.HasSuffix(name, "mlp.experts.gate_up_proj.weight"):
		if len(s) != 3 || s[2]%2 != 0 {
			return nil, fmt.Errorf("unexpected gate_up_proj shape for %s: %v", name, s)
		}
		base := strings.TrimSuffix(name, ".weight")
		base = base[:strings.LastIndex(base, ".")]
		half := s[2] / 2
		var outs []Output
		for i, part := range []string{"gate_proj", "up_proj"} {
			o, err := m.mapped(in, base+"."+part+".weight", bid, swapLast2(s, int64(i)*half, half))
			if err != nil {
				return nil, err
			}
			o[0].Shape = []int64{s[0], half, s[1]}
			outs = append(outs, o...)
		}
		return outs, nil
	}
	return m.qwenMoe.Modify(in, bid)
}

// swapLast2 is x[..., lo:lo+n].permute(0, 2, 1) of a 3-D tensor
// [a, b, c]: the result [a, n, b] has out[i, j, k] = x[i, k, lo+j].
func swapLast2(shape []int64, lo, n int64) func([][]float32) ([]float32, error) {
	a, b, c := shape[0], shape[1], shape[2]
	return func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		if int64(len(src)) != a*b*c {
			return nil, fmt.Errorf("permute: %d values for shape %v", len(src), shape)
		}
		dst := make([]float32, a*n*b)
		for i := range a {
			for j := range n {
				for k := range b {
					dst[(i*n+j)*b+k] = src[(i*b+k)*c+lo+j]
				}
			}
		}
		return dst, nil
	}
}
