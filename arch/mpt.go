package arch

import (
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newMPT, "MPTForCausalLM")
}

// mpt is MPTModel (conversion/mpt.py): ALiBi (or none), a fused Wqkv,
// everything under attn_config read from there.
type mpt struct{ text }

func newMPT(h HParams, dir string) (Model, error) {
	t, err := newText("mpt", h, dir)
	return &mpt{t}, err
}

// Vocab is the GPT-2 routine; the converter's SentencePiece fallback
// (SEA-LION) is not read by ggufkit, which fails on such a folder.
func (m *mpt) Vocab() VocabKind { return VocabGPT2 }

// mptNormEps is the epsilon MPTModel writes (add_layer_norm_eps(1e-5)).
const mptNormEps = 1e-5

// Params is MPTModel.set_gguf_parameters: the feed-forward length is 4 ×
// d_model, the KV head count only when attn_config.kv_n_heads is set, the
// clamp when clip_qkv is not null, the ALiBi maximum bias (0 without
// ALiBi), and no general.file_type.
func (m *mpt) Params(gguf.FileType) ([]gguf.KV, error) {
	ac, ok := m.h["attn_config"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("config.json: attn_config is missing or not an object")
	}
	dModel, err := m.h.MustInt("d_model")
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	for _, s := range []struct {
		suffix, key string
		add         func(string, any) error
	}{
		{"context_length", "max_seq_len", k.u32},
		{"embedding_length", "d_model", k.u32},
	} {
		v, ok := m.h[s.key]
		if !ok {
			return nil, fmt.Errorf("config.json: %s is missing", s.key)
		}
		if err := s.add(s.suffix, v); err != nil {
			return nil, err
		}
	}
	if err := k.u32("block_count", m.blocks); err != nil {
		return nil, err
	}
	if err := k.u32OrArray("feed_forward_length", 4*dModel); err != nil {
		return nil, err
	}
	nHead, ok := m.h["n_heads"]
	if !ok {
		return nil, fmt.Errorf("config.json: n_heads is missing")
	}
	if err := k.u32OrArray("attention.head_count", nHead); err != nil {
		return nil, err
	}
	if kvHeads := ac["kv_n_heads"]; kvHeads != nil && !isZero(kvHeads) {
		if err := k.u32OrArray("attention.head_count_kv", kvHeads); err != nil {
			return nil, err
		}
	}
	if err := k.f32("attention.layer_norm_epsilon", mptNormEps); err != nil {
		return nil, err
	}
	for _, key := range []string{"clip_qkv", "alibi"} {
		if _, ok := ac[key]; !ok {
			return nil, fmt.Errorf("config.json: attn_config.%s is missing", key)
		}
	}
	if clip := ac["clip_qkv"]; clip != nil {
		if err := k.f32("attention.clamp_kqv", clip); err != nil {
			return nil, err
		}
	}
	var maxBias any = 0.0
	if alibi, ok := ac["alibi"].(bool); !ok {
		return nil, &ConfigError{Key: "attn_config.alibi", Value: ac["alibi"], Msg: "is not a bool"}
	} else if alibi {
		if maxBias, ok = ac["alibi_bias_max"]; !ok {
			return nil, fmt.Errorf("config.json: attn_config.alibi_bias_max is missing")
		}
	}
	if err := k.f32("attention.max_alibi_bias", maxBias); err != nil {
		return nil, err
	}
	return k.l.KVs(), nil
}

// Modify maps the tensors by name; AWQ's activation scales (…ffn.act.scales)
// are refused.
func (m *mpt) Modify(in Input, bid int) ([]Output, error) {
	if strings.Contains(in.Name, "scales") {
		return nil, fmt.Errorf("%s: AWQ activation scales are not supported", in.Name)
	}
	return m.mapped(in, in.Name, bid, nil)
}
