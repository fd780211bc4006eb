package arch

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newCohere2, "Cohere2ForCausalLM")
}

// cohere2 is Cohere2Model (conversion/command_r.py), Command R7B and
// Command A: TextModel's parameters and tensors, the logit scale, the
// sliding window, the vocabulary size, a rope dimension count from
// rotary_pct and no rope scaling. llama.cpp's runtime takes the 3:1
// sliding/global layer pattern as fixed, so none is written.
type cohere2 struct{ text }

func newCohere2(h HParams, dir string) (Model, error) {
	t, err := newText("cohere2", h, dir)
	return &cohere2{t}, err
}

func (m *cohere2) Vocab() VocabKind { return VocabGPT2 }

// Params is Cohere2Model.set_gguf_parameters.
func (m *cohere2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	for _, e := range []struct {
		key, suffix string
		add         func(string, any) error
	}{
		{"logit_scale", "logit_scale", k.f32},
		{"sliding_window", "attention.sliding_window", k.u32},
		{"vocab_size", "vocab_size", k.u32},
	} {
		v, ok := m.h[e.key]
		if !ok {
			return nil, &ConfigError{Key: e.key, Value: nil, Msg: "is missing"}
		}
		if err := e.add(e.suffix, v); err != nil {
			return nil, err
		}
	}
	// int(rotary_pct × (hidden_size // num_attention_heads))
	pctV, ok := m.h["rotary_pct"]
	if !ok {
		return nil, &ConfigError{Key: "rotary_pct", Value: nil, Msg: "is missing"}
	}
	pct, err := asFloat(pctV)
	if err != nil {
		return nil, &ConfigError{Key: "rotary_pct", Value: pctV, Msg: "is not a number"}
	}
	hidden, err := m.h.MustInt("hidden_size")
	if err != nil {
		return nil, err
	}
	heads, err := m.h.MustInt("num_attention_heads")
	if err != nil {
		return nil, err
	}
	if heads == 0 {
		return nil, &ConfigError{Key: "num_attention_heads", Value: heads, Msg: "is not a head count"}
	}
	dims := pct * float64(floorDiv(hidden, heads))
	if !(dims >= 0 && dims < 1<<32) {
		return nil, &ConfigError{Key: "rotary_pct", Value: pctV, Msg: "does not give a rope dimension count"}
	}
	if err := k.u32("rope.dimension_count", int64(dims)); err != nil {
		return nil, err
	}
	k.l.Set(k.key("rope.scaling.type"), gguf.String("none")) // RopeScalingType.NONE
	return k.l.KVs(), nil
}

// Modify is Cohere2Model.modify_tensors: bias tensors are left out (the
// runtime has none) after a check that they hold only zeros.
func (m *cohere2) Modify(in Input, bid int) ([]Output, error) {
	if strings.HasSuffix(in.Name, ".bias") {
		out := identity(in, "", bid)
		out.DropIfZero = true
		return []Output{out}, nil
	}
	return m.mapped(in, in.Name, bid, nil)
}
