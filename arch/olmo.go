package arch

import "github.com/ggufkit/ggufkit/gguf"

func init() {
	register(newOlmo2, "Olmo2ForCausalLM")
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
