package arch

import (
	"maps"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newCommandR, "CohereForCausalLM")
}

// commandR is CommandR2Model (conversion/command_r.py), Cohere's Command R
// and Aya: TextModel's parameters and tensors, the context length from
// model_max_length, a logit scale and no rope scaling.
type commandR struct{ text }

func newCommandR(h HParams, dir string) (Model, error) {
	// The converter's constructor: max_position_embeddings (8192 in
	// Command R's config.json) is replaced by model_max_length, the
	// context the model was trained for, when there is one.
	if v, _, ok := h.Find("model_max_length", "max_position_embeddings"); ok {
		h = maps.Clone(h)
		h["max_position_embeddings"] = v
	}
	t, err := newText("command-r", h, dir)
	return &commandR{t}, err
}

func (m *commandR) Vocab() VocabKind { return VocabGPT2 }

func (m *commandR) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	v, ok := m.h["logit_scale"]
	if !ok {
		return nil, &ConfigError{Key: "logit_scale", Value: nil, Msg: "is missing"}
	}
	if err := k.f32("logit_scale", v); err != nil {
		return nil, err
	}
	// add_rope_scaling_type(RopeScalingType.NONE)
	k.l.Set(k.key("rope.scaling.type"), gguf.String("none"))
	return k.l.KVs(), nil
}

func (m *commandR) Modify(in Input, bid int) ([]Output, error) {
	return m.mapped(in, in.Name, bid, nil)
}
