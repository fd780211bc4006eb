package arch

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newStarCoder, "GPTBigCodeForCausalLM")
}

// starcoder is StarCoderModel (conversion/starcoder.py), GPT-BigCode:
// generic tensors (its c_attn is a Linear layer, not GPT-2's Conv1D), one
// KV head, a feed-forward length of 4 × n_embd.
type starcoder struct{ text }

func newStarCoder(h HParams, dir string) (Model, error) {
	t, err := newText("starcoder", h, dir)
	return &starcoder{t}, err
}

func (m *starcoder) Vocab() VocabKind { return VocabGPT2 }

// Params is StarCoderModel.set_gguf_parameters. head_count_kv is 1 even
// for a config without multi_query, as the converter writes it.
func (m *starcoder) Params(ft gguf.FileType) ([]gguf.KV, error) {
	for _, key := range []string{"n_positions", "n_head", "layer_norm_epsilon"} {
		if _, ok := m.h[key]; !ok {
			return nil, fmt.Errorf("config.json: %s is missing", key)
		}
	}
	nEmbd, err := m.h.MustInt("n_embd")
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	for _, s := range []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"context_length", m.h["n_positions"], k.u32},
		{"embedding_length", nEmbd, k.u32},
		{"feed_forward_length", 4 * nEmbd, k.u32OrArray},
		{"block_count", m.blocks, k.u32},
		{"attention.head_count", m.h["n_head"], k.u32OrArray},
		{"attention.head_count_kv", 1, k.u32OrArray},
		{"attention.layer_norm_epsilon", m.h["layer_norm_epsilon"], k.f32},
	} {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k.l.KVs(), nil
}

func (m *starcoder) Modify(in Input, bid int) ([]Output, error) {
	return m.mapped(in, in.Name, bid, nil)
}
