package arch

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newMiniMaxM2, "MiniMaxM2ForCausalLM")
}

// miniMaxM2 is MiniMaxM2Model (conversion/minimax.py, GGUF arch
// minimax-m2): TextModel's parameters and tensor names, the expert FFN
// length and the rotary dimension count, and the per-expert
// block_sparse_moe w1/w2/w3 tensors stacked per block.
type miniMaxM2 struct {
	text
	experts blockSparseExperts
}

func newMiniMaxM2(h HParams, dir string) (Model, error) {
	t, err := newText("minimax-m2", h, dir)
	if err != nil {
		return nil, err
	}
	return &miniMaxM2{text: t}, nil
}

// Vocab: MiniMaxM2Model keeps TextModel.set_vocab, the gpt2 routine.
func (m *miniMaxM2) Vocab() VocabKind { return VocabGPT2 }

// Params is MiniMaxM2Model.set_gguf_parameters: TextModel's, then
// intermediate_size as the expert feed-forward length and rotary_dim as
// the rope dimension count (find_hparam: both required).
func (m *miniMaxM2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	for _, e := range []struct{ key, suffix string }{
		{"intermediate_size", "expert_feed_forward_length"},
		{"rotary_dim", "rope.dimension_count"},
	} {
		v, ok := m.h[e.key]
		if !ok {
			return nil, &ConfigError{Key: e.key, Msg: "is missing (MiniMaxM2Model writes it as " + e.suffix + ")"}
		}
		if err := k.u32(e.suffix, v); err != nil {
			return nil, err
		}
	}
	return k.l.KVs(), nil
}

// Modify is MiniMaxM2Model.modify_tensors: a block's expert tensors are
// held until all num_local_experts × (w1, w2, w3) have arrived, then
// stacked per projection in that order.
func (m *miniMaxM2) Modify(in Input, bid int) ([]Output, error) {
	if !strings.Contains(in.Name, "block_sparse_moe.experts.") {
		return m.mapped(in, in.Name, bid, nil)
	}
	return m.experts.add(&m.text, in, bid)
}

func (m *miniMaxM2) Finish() error { return m.experts.finish() }
