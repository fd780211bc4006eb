package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newSmallThinker, "SmallThinkerForCausalLM")
}

// smallThinker is SmallThinkerModel (conversion/smallthinker.py): a
// remote-code MoE read as config.json has it, per-expert gate/up/down of
// block_sparse_moe stacked per block.
type smallThinker struct {
	text
	experts *expertStacker
}

func newSmallThinker(h HParams, dir string) (Model, error) {
	t, err := newText("smallthinker", h, dir)
	if err != nil {
		return nil, err
	}
	return &smallThinker{text: t}, nil
}

// Vocab: SmallThinkerModel keeps TextModel.set_vocab, the gpt2 routine.
func (m *smallThinker) Vocab() VocabKind { return VocabGPT2 }

// Params is SmallThinkerModel.set_gguf_parameters.
func (m *smallThinker) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	h := m.h
	if v := h["moe_num_primary_experts"]; v != nil {
		if err := k.u32("expert_count", v); err != nil {
			return nil, err
		}
	}
	if v := h["moe_num_active_primary_experts"]; v != nil {
		if err := k.u32("expert_used_count", v); err != nil {
			return nil, err
		}
	}
	if v := h["moe_ffn_hidden_size"]; v != nil {
		if err := k.u32("expert_feed_forward_length", v); err != nil {
			return nil, err
		}
		if err := k.u32("feed_forward_length", v); err != nil {
			return nil, err
		}
	}
	gating := uint32(2) // ExpertGatingFuncType.SIGMOID
	if Truthy(h["moe_primary_router_apply_softmax"]) {
		gating = 1 // SOFTMAX
	}
	k.l.Set(k.key("expert_gating_func"), gguf.Uint32(gating))
	if layout := h["sliding_window_layout"]; Truthy(layout) {
		list, ok := layout.([]any)
		if !ok {
			return nil, &ConfigError{Key: "sliding_window_layout", Value: layout, Msg: "is not a list"}
		}
		for _, e := range list {
			// Python's i != 0: false and numeric zeros equal 0.
			if f, err := asFloat(e); e == false || (err == nil && f == 0) {
				continue
			}
			if sw := h["sliding_window_size"]; Truthy(sw) {
				if err := k.u32("attention.sliding_window", sw); err != nil {
					return nil, err
				}
			}
			break
		}
	}
	return k.l.KVs(), nil
}

// Modify is SmallThinkerModel.modify_tensors: any name with "experts" is
// held until its block's experts are complete.
func (m *smallThinker) Modify(in Input, bid int) ([]Output, error) {
	if !strings.Contains(in.Name, "experts") {
		return m.mapped(in, in.Name, bid, nil)
	}
	if m.experts == nil {
		n, err := expertCount(m.h, "moe_num_primary_experts", "num_local_experts", "num_experts")
		if err != nil {
			return nil, err
		}
		m.experts = newExpertStacker(n, m.blocks, []string{"down", "gate", "up"}, m.names)
	}
	return m.experts.add(in, nil, bid, func(bid, xid int, wid string) string {
		return fmt.Sprintf("model.layers.%d.block_sparse_moe.experts.%d.%s.weight", bid, xid, wid)
	}, func(bid int, wid string) string {
		return fmt.Sprintf("model.layers.%d.block_sparse_moe.experts.%s.weight", bid, wid)
	})
}

func (m *smallThinker) Finish() error { return m.experts.finish() }
