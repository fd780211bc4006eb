package arch

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newOlmoe, "OlmoeForCausalLM")
	// OlmoeConfig.__post_init__: num_key_value_heads = num_attention_heads
	// when None.
	derivedKeys["olmoe"] = append(derivedKeys["olmoe"], deriveKVHeads)
}

// olmoe is OlmoeModel (conversion/olmo.py): TextModel's parameters with a
// fixed RMS norm epsilon, TextModel's tensor names, per-expert MLPs
// stacked per block as Qwen2MoeModel does.
type olmoe struct {
	text
	experts mlpExperts
}

func newOlmoe(h HParams, dir string) (Model, error) {
	t, err := newText("olmoe", h, dir)
	if err != nil {
		return nil, err
	}
	return &olmoe{text: t}, nil
}

// Vocab: OlmoeModel keeps TextModel.set_vocab, the gpt2 routine.
func (m *olmoe) Vocab() VocabKind { return VocabGPT2 }

// Params is OlmoeModel.set_gguf_parameters: TextModel's, then
// add_layer_norm_rms_eps(1e-5), which overwrites rms_norm_eps in place.
func (m *olmoe) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	if err := k.f32("attention.layer_norm_rms_epsilon", olmoNormEps); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Modify is OlmoeModel.modify_tensors: any name with "experts" is held
// until its block's experts are complete.
func (m *olmoe) Modify(in Input, bid int) ([]Output, error) {
	if strings.Contains(in.Name, "experts") {
		return m.experts.add(&m.text, in, bid, "num_local_experts", "num_experts")
	}
	return m.mapped(in, in.Name, bid, nil)
}

func (m *olmoe) Finish() error { return m.experts.finish() }
