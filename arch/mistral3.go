package arch

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newMistral3, "Mistral3ForConditionalGeneration", "Ministral3ForCausalLM")
}

// mistral3 is Mistral3Model (conversion/mistral3.py) with its text part,
// Mistral3Model.Ministral3Model: LlamaModel under the mistral3
// architecture, plus, for model_type ministral3, the yarn log multiplier
// and the attention temperature scale of its rope parameters. Mistral 4
// (model_type mistral4) goes to Mistral3Model.Mistral4Model instead (see
// newMistral4).
type mistral3 struct{ *llama }

func newMistral3(h HParams, dir string) (Model, error) {
	if mt, _ := h["model_type"].(string); mt == "mistral4" {
		return newMistral4(h, dir)
	}
	l, err := newLlamaArch("mistral3", h, dir)
	if err != nil {
		return nil, err
	}
	return &mistral3{l}, nil
}

// Params is Ministral3Model.set_gguf_parameters: LlamaModel's, then for
// ministral3 (whose rope parameters must be yarn) mscale_all_dim as
// rope.scaling.yarn_log_multiplier and llama_4_scaling_beta as
// attention.temperature_scale.
func (m *mistral3) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.llama.Params(ft)
	if err != nil {
		return nil, err
	}
	if mt, _ := m.h["model_type"].(string); mt != "ministral3" {
		return kvs, nil
	}
	rp := m.rope
	if typ, _ := rp["rope_type"].(string); typ != "yarn" {
		return nil, &ConfigError{Key: "rope_parameters.rope_type", Value: rp["rope_type"], Msg: "is not yarn, which ministral3 must have"}
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	for _, e := range []struct{ key, suffix string }{
		{"mscale_all_dim", "rope.scaling.yarn_log_multiplier"},
		{"llama_4_scaling_beta", "attention.temperature_scale"},
	} {
		v, ok := rp[e.key]
		if !ok {
			return nil, fmt.Errorf("config.json: ministral3 rope_parameters without %s", e.key)
		}
		if err := k.f32(e.suffix, v); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}
