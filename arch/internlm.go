package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newInternLM2, "InternLM2ForCausalLM")
	register(newInternLM3, "InternLM3ForCausalLM")
	// InternLM3Config.__post_init__: head_dim and num_key_value_heads as
	// LlamaConfig. (InternLM2 has no transformers config class: the
	// converter reads its config.json as it is.)
	derivedKeys["internlm3"] = append(derivedKeys["internlm3"], deriveHeadDim, deriveKVHeads)
}

// internLM2 is InternLM2Model (conversion/internlm.py): TextModel under
// the internlm2 architecture with its own SentencePiece routine; each
// block's fused attention.wqkv, grouped per KV head as q_per_kv query
// heads then one key and one value head, is regrouped into Q, K and V,
// Q and K permuted as LlamaModel does.
type internLM2 struct{ text }

func newInternLM2(h HParams, dir string) (Model, error) {
	t, err := newText("internlm2", h, dir)
	if err != nil {
		return nil, err
	}
	return &internLM2{t}, nil
}

func (m *internLM2) Vocab() VocabKind { return VocabInternLM2 }

func (m *internLM2) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k, err := m.params(ft)
	if err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Modify is InternLM2Model.modify_tensors.
func (m *internLM2) Modify(in Input, bid int) ([]Output, error) {
	if bid < 0 || !strings.Contains(in.Name, fmt.Sprintf("model.layers.%d.attention.wqkv", bid)) {
		return m.mapped(in, in.Name, bid, nil)
	}
	nHead, err := m.h.MustInt("num_attention_heads")
	if err != nil {
		return nil, err
	}
	nKV, err := m.h.MustInt("num_key_value_heads")
	if err != nil {
		return nil, err
	}
	nEmbd, err := m.h.MustInt("hidden_size")
	if err != nil {
		return nil, err
	}
	if nHead <= 0 || nKV <= 0 || nHead%nKV != 0 || nEmbd%nHead != 0 {
		return nil, fmt.Errorf("config.json: %d attention heads, %d KV heads and hidden size %d do not group wqkv", nHead, nKV, nEmbd)
	}
	qPerKV := nHead / nKV
	headDim := nEmbd / nHead
	groups := nHead / qPerKV
	s := in.Shape
	if len(s) != 2 || s[0] != groups*(qPerKV+2)*headDim || s[1] != nEmbd {
		return nil, fmt.Errorf("wqkv of shape %v, want [%d, %d] (%d groups of %d query heads, a key and a value head of %d)",
			s, groups*(qPerKV+2)*headDim, nEmbd, groups, qPerKV, headDim)
	}
	// Source rows of Q, K and V in the reshape (groups, q_per_kv+2,
	// head_dim, n_embd).
	var qRows, kRows, vRows []int64
	for g := range groups {
		base := g * (qPerKV + 2) * headDim
		for j := range qPerKV * headDim {
			qRows = append(qRows, base+j)
		}
		for j := range headDim {
			kRows = append(kRows, base+qPerKV*headDim+j)
			vRows = append(vRows, base+(qPerKV+1)*headDim+j)
		}
	}
	var outs []Output
	for _, part := range []struct {
		kind  Kind
		rows  []int64
		heads int64 // permutation heads; 0: none (V)
	}{{KindAttnQ, qRows, nHead}, {KindAttnK, kRows, nKV}, {KindAttnV, vRows, 0}} {
		rows := part.rows
		if part.heads > 0 {
			_, order, err := permuteQK([]int64{int64(len(rows)), nEmbd}, nHead, part.heads)
			if err != nil {
				return nil, fmt.Errorf("Q/K permutation: %w", err)
			}
			permuted := make([]int64, len(order))
			for i, o := range order {
				permuted[i] = rows[o]
			}
			rows = permuted
		}
		name, err := m.names.Format(part.kind, bid, ".weight")
		if err != nil {
			return nil, err
		}
		o, err := m.mapped(in, name, bid, selectRows(s, rows))
		if err != nil {
			return nil, err
		}
		o[0].Shape = []int64{int64(len(rows)), nEmbd}
		o[0].HFName = name
		outs = append(outs, o...)
	}
	return outs, nil
}

// internLM3 is InternLM3Model (conversion/internlm.py): a TextModel under
// the llama architecture with LlamaModel's keys and Q/K permutation (but
// not its other tensor handling or filter) and its own vocabulary routine.
type internLM3 struct{ *llama }

func newInternLM3(h HParams, dir string) (Model, error) {
	l, err := newLlamaArch("llama", h, dir)
	if err != nil {
		return nil, err
	}
	return &internLM3{l}, nil
}

func (m *internLM3) Vocab() VocabKind { return VocabInternLM3 }

// Filter is InternLM3Model.filter_tensors: vision tensors (mlp*,
// vision_model*) dropped, then TextModel's filter.
func (m *internLM3) Filter(name string) (string, bool) {
	if strings.HasPrefix(name, "mlp") || strings.HasPrefix(name, "vision_model") {
		return "", false
	}
	return m.text.Filter(name)
}

// Modify permutes Q and K as LlamaModel does; no experts.
func (m *internLM3) Modify(in Input, bid int) ([]Output, error) {
	if strings.Contains(in.Name, "block_sparse_moe.experts") {
		return nil, m.unmapped(in.Name, bid)
	}
	return m.llama.Modify(in, bid)
}
