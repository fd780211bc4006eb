package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newFalcon, "FalconForCausalLM", "RWForCausalLM")
}

// falcon is FalconModel (conversion/falcon.py): the fused query_key_value
// tensor regrouped from per-KV-group (queries, key, value) to Q|K|V, the
// "jploski" layout llama.cpp's falcon graph reads.
type falcon struct{ text }

func newFalcon(h HParams, dir string) (Model, error) {
	t, err := newText("falcon", h, dir)
	return &falcon{t}, err
}

func (m *falcon) Vocab() VocabKind { return VocabGPT2 }

// heads is the head count and KV head count as the converter's
// modify_tensors reads them: num_kv_heads (or the old n_head_kv), else 1.
func (m *falcon) heads() (nHead, nKV int64, err error) {
	if nHead, err = m.h.MustInt("num_attention_heads", "n_head"); err != nil {
		return 0, 0, err
	}
	nKV, ok, err := m.h.Int("num_kv_heads", "n_head_kv")
	if err != nil {
		return 0, 0, err
	}
	if !ok || nKV == 0 {
		nKV = 1
	}
	return nHead, nKV, nil
}

// Params is FalconModel.set_gguf_parameters: a context length of 2048
// (config.json has none) and a feed-forward length of 4 × hidden.
func (m *falcon) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k := &kv{arch: m.arch}
	nHead, _, ok := m.h.Find("num_attention_heads")
	if !ok || nHead == nil {
		if nHead, ok = m.h["n_head"]; !ok {
			return nil, fmt.Errorf("config.json: num_attention_heads is missing")
		}
	}
	nKV, _, ok := m.h.Find("num_kv_heads")
	if !ok || nKV == nil {
		if nKV, ok = m.h["n_head_kv"]; !ok || nKV == nil {
			nKV = 1
		}
	}
	hidden, err := m.h.MustInt("hidden_size")
	if err != nil {
		return nil, err
	}
	eps, ok := m.h["layer_norm_epsilon"]
	if !ok {
		return nil, fmt.Errorf("config.json: layer_norm_epsilon is missing")
	}
	if err := k.u32("context_length", 2048); err != nil {
		return nil, err
	}
	k.l.Set(k.key("tensor_data_layout"), gguf.String("jploski"))
	for _, s := range []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"embedding_length", hidden, k.u32},
		{"feed_forward_length", 4 * hidden, k.u32OrArray},
		{"block_count", m.blocks, k.u32},
		{"attention.head_count", nHead, k.u32OrArray},
		{"attention.head_count_kv", nKV, k.u32OrArray},
		{"attention.layer_norm_epsilon", eps, k.f32},
	} {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k.l.KVs(), nil
}

// Modify regroups query_key_value: stored as nKV groups of nHead/nKV
// query heads, one key head and one value head (each head headDim rows),
// written as all query heads, then the keys, then the values.
func (m *falcon) Modify(in Input, bid int) ([]Output, error) {
	if !strings.Contains(in.Name, "query_key_value") {
		return m.mapped(in, in.Name, bid, nil)
	}
	nHead, nKV, err := m.heads()
	if err != nil {
		return nil, err
	}
	hidden, err := m.h.MustInt("hidden_size")
	if err != nil {
		return nil, err
	}
	if nHead <= 0 || nKV <= 0 || nHead%nKV != 0 || hidden%nHead != 0 {
		return nil, fmt.Errorf("%s: %d heads in %d KV groups of a %d-wide model", in.Name, nHead, nKV, hidden)
	}
	headDim := hidden / nHead
	group := nHead/nKV + 2
	// The converter views the tensor as (nKV, group, headDim, hidden): a
	// matrix of that many rows of hidden values (a bias does not fit).
	if len(in.Shape) != 2 || in.Shape[0] != nKV*group*headDim || in.Shape[1] != hidden {
		if len(in.Shape) == 2 && nKV == nHead && nHead > 1 && in.Shape[0] == (nHead+2)*headDim {
			// falcon-7b: multi_query without num_kv_heads, which
			// FalconConfig sets to the head count.
			return nil, fmt.Errorf("%s: shape %v holds one KV head, but num_kv_heads is %d (FalconConfig's default, the head count); llama.cpp's converter fails on this checkpoint too", in.Name, in.Shape, nKV)
		}
		return nil, fmt.Errorf("%s: shape %v is not %d KV groups of %d heads of %d rows of %d", in.Name, in.Shape, nKV, group, headDim, hidden)
	}
	var order []int64
	for g := range nKV {
		for q := range group - 2 {
			order = append(order, g*group+q)
		}
	}
	for _, off := range []int64{group - 2, group - 1} {
		for g := range nKV {
			order = append(order, g*group+off)
		}
	}
	build, err := permuteRowBlocks(in.Shape, headDim, order)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.Name, err)
	}
	return m.mapped(in, in.Name, bid, build)
}
