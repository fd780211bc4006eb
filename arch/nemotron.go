package arch

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newNemotron, "NemotronForCausalLM")
	// NemotronConfig.__post_init__: head_dim = hidden_size //
	// num_attention_heads when None; partial_rotary_factor 0.5 when the
	// config has none ("for BC").
	derivedKeys["nemotron"] = append(derivedKeys["nemotron"], deriveHeadDim, derivePartialRotary(json.Number("0.5")))
}

// nemotron is NemotronModel (conversion/nemotron.py): TextModel's tensors
// with LayerNorm1P folded in (1 added to every norm weight), the partial
// rotary dimension count and the rope scaling type.
type nemotron struct{ text }

func newNemotron(h HParams, dir string) (Model, error) {
	t, err := newText("nemotron", h, dir)
	return &nemotron{t}, err
}

func (m *nemotron) Vocab() VocabKind { return VocabSentencePiece }

// AdjustVocab is the end of NemotronModel.set_vocab: padding id 0,
// unknown id 1.
func (m *nemotron) AdjustVocab(kvs []gguf.KV) ([]gguf.KV, error) {
	var l gguf.KVList
	l.Append(kvs...)
	l.Set(gguf.KeyTokenizerPaddingID, gguf.Uint32(0))
	l.Set(gguf.KeyTokenizerUnknownID, gguf.Uint32(1))
	return l.KVs(), nil
}

// Params is NemotronModel.set_gguf_parameters: TextModel's, then the
// vocabulary size, the LayerNorm epsilon, the rope dimension count
// (int(partial_rotary_factor × n_embd) // n_head) and the rope scaling
// (linear by factor, else none).
func (m *nemotron) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	vs, ok := m.h["vocab_size"]
	if !ok {
		return nil, fmt.Errorf("config.json: vocab_size is missing")
	}
	if err := k.u32("vocab_size", vs); err != nil {
		return nil, err
	}
	eps, _, ok := m.h.Find("layer_norm_eps", "layer_norm_epsilon", "norm_epsilon", "norm_eps")
	if !ok {
		return nil, fmt.Errorf("config.json: norm_eps is missing")
	}
	if err := k.f32("attention.layer_norm_epsilon", eps); err != nil {
		return nil, err
	}
	if _, ok := m.rope["partial_rotary_factor"]; !ok {
		// rope_parameters["partial_rotary_factor"]: a KeyError.
		return nil, fmt.Errorf("config.json: partial_rotary_factor is missing")
	}
	_, _, dims, err := m.ropeDims()
	if err != nil {
		return nil, err
	}
	if err := k.u32("rope.dimension_count", dims); err != nil {
		return nil, err
	}
	// hparams.get("factor") or rope_parameters.get("factor"): a falsy
	// value counts as absent.
	factor := m.h["factor"]
	if !Truthy(factor) {
		factor = m.rope["factor"]
	}
	if !Truthy(factor) {
		k.l.Set(k.key("rope.scaling.type"), gguf.String("none"))
	} else {
		k.l.Set(k.key("rope.scaling.type"), gguf.String("linear"))
		if err := k.f32("rope.scaling.factor", factor); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// Modify is NemotronModel.modify_tensors: 1 added to the weights whose
// name ends in norm.weight (layernorm1p), the rest mapped unchanged.
func (m *nemotron) Modify(in Input, bid int) ([]Output, error) {
	var build func([][]float32) ([]float32, error)
	if strings.HasSuffix(in.Name, "norm.weight") {
		build = addOne(in.DType)
	}
	return m.mapped(in, in.Name, bid, build)
}
