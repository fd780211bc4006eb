package arch

import (
	"fmt"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newT5(true), "T5WithLMHeadModel", "T5ForConditionalGeneration", "MT5ForConditionalGeneration",
		"UMT5ForConditionalGeneration", "UMT5Model")
	register(newT5(false), "T5EncoderModel")
}

// t5 is T5Model (arch t5, encoder-decoder) and T5EncoderModel (arch
// t5encoder) of conversion/t5.py: their own hyperparameter keys, the
// SentencePiece Unigram vocabulary, and one token embedding taken from
// whichever of shared / encoder.embed_tokens / decoder.embed_tokens comes
// first.
type t5 struct {
	text
	decoder bool
	// embedded is set once the token embedding has been written.
	embedded bool
}

func newT5(decoder bool) Constructor {
	return func(h HParams, dir string) (Model, error) {
		arch := "t5encoder"
		if decoder {
			arch = "t5"
		}
		t, err := newText(arch, h, dir)
		if err != nil {
			return nil, err
		}
		return &t5{text: t, decoder: decoder}, nil
	}
}

func (m *t5) Vocab() VocabKind { return VocabT5 }

// Params is T5Model / T5EncoderModel.set_gguf_parameters.
func (m *t5) Params(ft gguf.FileType) ([]gguf.KV, error) {
	k := &kv{arch: m.arch}
	var ctx any = 512 // the converter's default when config.json has no n_positions
	if v := m.h["n_positions"]; v != nil {
		ctx = v
	}
	need := func(key string) (any, error) {
		v, ok := m.h[key]
		if !ok {
			return nil, &ConfigError{Key: key, Msg: "is missing"}
		}
		return v, nil
	}
	steps := []struct {
		suffix string
		key    string // config key, "" for a value given
		v      any
		add    func(string, any) error
		skip   bool
	}{
		{"context_length", "", ctx, k.u32, false},
		{"embedding_length", "d_model", nil, k.u32, false},
		{"feed_forward_length", "d_ff", nil, k.u32, false},
		{"block_count", "", m.blocks, k.u32, false},
		{"decoder_block_count", "", m.h["num_decoder_layers"], k.u32, !m.decoder || m.h["num_decoder_layers"] == nil},
		{"attention.head_count", "num_heads", nil, k.u32, false},
		{"attention.key_length", "d_kv", nil, k.u32, false},
		{"attention.value_length", "d_kv", nil, k.u32, false},
		{"attention.layer_norm_epsilon", "layer_norm_epsilon", nil, k.f32, false},
		{"attention.relative_buckets_count", "relative_attention_num_buckets", nil, k.u32, false},
		{"attention.layer_norm_rms_epsilon", "layer_norm_epsilon", nil, k.f32, false},
		{"decoder_start_token_id", "decoder_start_token_id", nil, k.u32, !m.decoder},
	}
	for _, s := range steps {
		if s.skip {
			continue
		}
		v := s.v
		if s.key != "" {
			var err error
			if v, err = need(s.key); err != nil {
				return nil, err
			}
		}
		if err := s.add(s.suffix, v); err != nil {
			return nil, err
		}
	}
	k.l.Set(gguf.KeyGeneralFileType, gguf.Uint32(uint32(ft)))
	return k.l.KVs(), nil
}

// Modify writes the first of the shared token embeddings as
// shared.weight and drops the others; every other tensor is mapped.
func (m *t5) Modify(in Input, bid int) ([]Output, error) {
	name := in.Name
	switch name {
	case "decoder.embed_tokens.weight", "encoder.embed_tokens.weight", "shared.weight":
		if m.embedded {
			return nil, nil
		}
		m.embedded = true
		name = "shared.weight"
	}
	out, err := m.mapped(in, name, bid, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.hfArch, err)
	}
	return out, nil
}
