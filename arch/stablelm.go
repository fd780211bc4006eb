package arch

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newStableLM, "StableLmForCausalLM", "StableLMEpochForCausalLM", "LlavaStableLMEpochForCausalLM")
}

// stablelm is StableLMModel (conversion/stablelm.py): LayerNorms with
// biases, partial rotary, optional parallel residual.
type stablelm struct{ text }

func newStableLM(h HParams, dir string) (Model, error) {
	t, err := newText("stablelm", h, dir)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		// StableLMModel.set_vocab reads tokenizer.json with the GPT-2
		// routine, and without one a Qwen-style tiktoken vocabulary
		// (_set_vocab_qwen), which ggufkit does not read.
		if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("arch: %s: a StableLM model without tokenizer.json (a Qwen-style tiktoken vocabulary) is not supported", dir)
		}
	}
	return &stablelm{t}, nil
}

func (m *stablelm) Vocab() VocabKind { return VocabGPT2 }

// Params is StableLMModel.set_gguf_parameters: rope dimensions
// int(partial_rotary_factor × head size), parallel residual true unless
// the hyperparameters say otherwise.
func (m *stablelm) Params(ft gguf.FileType) ([]gguf.KV, error) {
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
	pctV, ok := m.rope["partial_rotary_factor"]
	if !ok {
		return nil, fmt.Errorf("config.json: partial_rotary_factor is missing")
	}
	pct, err := asFloat(pctV)
	if err != nil {
		return nil, &ConfigError{Key: "partial_rotary_factor", Value: pctV, Msg: "is not a number"}
	}
	rot := math.Trunc(pct * float64(hidden/heads))
	if !(rot >= 0 && rot <= 1<<53) {
		return nil, &ConfigError{Key: "partial_rotary_factor", Value: pctV, Msg: fmt.Sprintf("gives %g rotary dimensions", rot)}
	}
	parallel := any(true)
	if v, ok := m.h["use_parallel_residual"]; ok {
		parallel = v
	}
	pb, ok := parallel.(bool)
	if !ok {
		return nil, &ConfigError{Key: "use_parallel_residual", Value: parallel, Msg: "is not a bool"}
	}
	for _, key := range []string{"max_position_embeddings", "intermediate_size", "num_key_value_heads"} {
		if _, ok := m.h[key]; !ok {
			return nil, fmt.Errorf("config.json: %s is missing", key)
		}
	}
	eps, _, ok := m.h.Find("layer_norm_eps", "norm_eps")
	if !ok {
		return nil, fmt.Errorf("config.json: layer_norm_eps is missing")
	}
	k := &kv{arch: m.arch}
	for _, s := range []struct {
		suffix string
		v      any
		add    func(string, any) error
	}{
		{"context_length", m.h["max_position_embeddings"], k.u32},
		{"embedding_length", hidden, k.u32},
		{"block_count", m.blocks, k.u32},
		{"feed_forward_length", m.h["intermediate_size"], k.u32OrArray},
		{"rope.dimension_count", int64(rot), k.u32},
		{"attention.head_count", heads, k.u32OrArray},
		{"attention.head_count_kv", m.h["num_key_value_heads"], k.u32OrArray},
	} {
		if err := s.add(s.suffix, s.v); err != nil {
			return nil, err
		}
	}
	k.l.Set(k.key("use_parallel_residual"), gguf.Bool(pb))
	if err := k.f32("attention.layer_norm_epsilon", eps); err != nil {
		return nil, err
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k.l.KVs(), nil
}

// Modify refuses the per-head q/k LayerNorms of qk_layernorm models
// (stablelm-2-12b): StableLMModel.modify_tensors is meant to stack them
// per block, but at llama.cpp 0c1e570 it returns the stacking generator
// instead of yielding from it, and the converter fails ("Unprocessed
// norms"), so there is no reference to match.
func (m *stablelm) Modify(in Input, bid int) ([]Output, error) {
	if strings.Contains(in.Name, "q_layernorm.norms") || strings.Contains(in.Name, "k_layernorm.norms") {
		return nil, fmt.Errorf("%s: per-head q/k layer norms (qk_layernorm) are not supported: llama.cpp's converter fails on them too", in.Name)
	}
	return m.mapped(in, in.Name, bid, nil)
}
