package arch

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newPhi2, "PhiForCausalLM")
}

// phi2 is Phi2Model (conversion/phi.py): generic tensors, partial rotary,
// a feed-forward length of 4 × n_embd, no BOS token.
type phi2 struct{ text }

func newPhi2(h HParams, dir string) (Model, error) {
	t, err := newText("phi2", h, dir)
	return &phi2{t}, err
}

func (m *phi2) Vocab() VocabKind { return VocabGPT2 }

// Params is Phi2Model.set_gguf_parameters. It also sets
// tokenizer.ggml.add_bos_token to false: the key keeps this place in the
// metadata, the tokenizer may change its value later.
func (m *phi2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	if _, ok := m.rope["partial_rotary_factor"]; !ok {
		return nil, fmt.Errorf("config.json: partial_rotary_factor is missing")
	}
	nEmbd, nHead, dims, err := m.ropeDims()
	if err != nil {
		return nil, err
	}
	ctx, _, ok := m.h.Find("n_positions", "max_position_embeddings")
	if !ok {
		return nil, fmt.Errorf("config.json: max_position_embeddings is missing")
	}
	eps, _, ok := m.h.Find("layer_norm_epsilon", "layer_norm_eps")
	if !ok {
		return nil, fmt.Errorf("config.json: layer_norm_eps is missing")
	}
	k := &kv{arch: m.arch}
	for _, s := range []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"context_length", ctx, k.u32},
		{"embedding_length", nEmbd, k.u32},
		{"feed_forward_length", 4 * nEmbd, k.u32OrArray},
		{"block_count", m.blocks, k.u32},
		{"attention.head_count", nHead, k.u32OrArray},
		{"attention.head_count_kv", nHead, k.u32OrArray},
		{"attention.layer_norm_epsilon", eps, k.f32},
		{"rope.dimension_count", dims, k.u32},
	} {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	k.l.Set(gguf.KeyTokenizerAddBOS, gguf.Bool(false))
	return k.l.KVs(), nil
}

func (m *phi2) Modify(in Input, bid int) ([]Output, error) { return m.mapped(in, in.Name, bid, nil) }
