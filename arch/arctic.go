package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newArctic, "ArcticForCausalLM")
}

// VocabArctic is ArcticModel.set_vocab: tokenizer.model with
// tokenizer_config.json's redefined tokens written over it.
const VocabArctic VocabKind = "arctic"

// arctic is ArcticModel (conversion/arctic.py, Snowflake Arctic, remote
// code): TextModel's parameters with the vocabulary size and rope
// dimension count, Q and K permuted as LlamaModel does, the dense residual
// MLP mapped by name (residual_layernorm is its ffn_norm,
// post_attention_layernorm the experts' ffn_norm_exps) and the
// block_sparse_moe experts' w1, w2, w3 stacked per block.
type arctic struct {
	text
	experts *expertStacker
}

func newArctic(h HParams, dir string) (Model, error) {
	t, err := newText("arctic", h, dir)
	if err != nil {
		return nil, err
	}
	return &arctic{text: t}, nil
}

func (m *arctic) Vocab() VocabKind { return VocabArctic }

// Params is ArcticModel.set_gguf_parameters: TextModel's, then the
// vocabulary size and hidden_size // num_attention_heads rope dimensions.
func (m *arctic) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	if err := k.u32("vocab_size", m.h["vocab_size"]); err != nil {
		return nil, err
	}
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
	if err := k.u32("rope.dimension_count", floorDiv(hidden, heads)); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Modify is ArcticModel.modify_tensors.
func (m *arctic) Modify(in Input, bid int) ([]Output, error) {
	nHead, err := m.h.MustInt("num_attention_heads")
	if err != nil {
		return nil, err
	}
	nKV := nHead // hparams.get("num_key_value_heads"): None permutes as n_head
	if n, ok, err := m.h.Int("num_key_value_heads"); err != nil {
		return nil, err
	} else if ok {
		nKV = n
	}
	var build func([][]float32) ([]float32, error)
	var order []int64
	switch {
	case strings.HasSuffix(in.Name, "q_proj.weight"):
		build, order, err = permuteQK(in.Shape, nHead, nHead)
	case strings.HasSuffix(in.Name, "k_proj.weight"):
		build, order, err = permuteQK(in.Shape, nHead, nKV)
	}
	if err != nil {
		return nil, fmt.Errorf("Q/K permutation: %w", err)
	}
	if strings.Contains(in.Name, "block_sparse_moe.experts") {
		if m.experts == nil {
			n, err := expertCount(m.h, "num_local_experts")
			if err != nil {
				return nil, err
			}
			m.experts = newExpertStacker(n, m.blocks, []string{"w1", "w2", "w3"}, m.names)
		}
		return m.experts.add(in, build, bid, func(bid, xid int, wid string) string {
			return fmt.Sprintf("model.layers.%d.block_sparse_moe.experts.%d.%s.weight", bid, xid, wid)
		}, func(bid int, wid string) string {
			return fmt.Sprintf("layers.%d.feed_forward.experts.%s.weight", bid, wid)
		})
	}
	outs, err := m.mapped(in, in.Name, bid, build)
	if err != nil {
		return nil, err
	}
	outs[0].RowOrder = order
	return outs, nil
}

func (m *arctic) Finish() error { return m.experts.finish() }
