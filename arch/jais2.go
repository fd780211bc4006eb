package arch

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newJais2, "Jais2ForCausalLM")
}

// jais2 is Jais2Model (conversion/jais.py): TextModel's parameters and
// tensors (LayerNorms, a ReLU² MLP, biases) plus the rotary dimension
// count, the head size.
type jais2 struct{ text }

func newJais2(h HParams, dir string) (Model, error) {
	t, err := newText("jais2", h, dir)
	return &jais2{t}, err
}

func (m *jais2) Vocab() VocabKind { return VocabGPT2 }

// Params appends, after general.file_type, rope.dimension_count: head_dim,
// else hidden_size // num_attention_heads.
func (m *jais2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	headDim, ok := m.h["head_dim"]
	if !ok {
		hidden, err := m.h.MustInt("hidden_size")
		if err != nil {
			return nil, err
		}
		heads, err := m.h.MustInt("num_attention_heads")
		if err != nil {
			return nil, err
		}
		if heads <= 0 {
			return nil, &ConfigError{Key: "num_attention_heads", Value: heads, Msg: "is not a head count"}
		}
		headDim = hidden / heads
	}
	if err := k.u32("rope.dimension_count", headDim); err != nil {
		return nil, fmt.Errorf("head_dim: %w", err)
	}
	return k.l.KVs(), nil
}

func (m *jais2) Modify(in Input, bid int) ([]Output, error) { return m.mapped(in, in.Name, bid, nil) }
