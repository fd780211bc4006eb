package arch

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newNeoBert, "NeoBERT", "NeoBERTLMHead", "NeoBERTForSequenceClassification")
}

// neoBert is NeoBert (conversion/bert.py): BertModel under the neo-bert
// architecture, with the "model." prefix and the masked-LM decoder
// dropped, SwiGLU at 2/3 of intermediate_size, RoPE and RMS norms.
type neoBert struct {
	*bert
}

func newNeoBert(h HParams, dir string) (Model, error) {
	// transformers has no NeoBERT config class, so the converter reads
	// config.json as it is: id2label's keys stay strings, and
	// BertModel.__init__'s placeholder check id2label[0] fails on every
	// two-label map.
	if labels, ok := h["id2label"].(map[string]any); ok && len(labels) == 2 {
		return nil, &ConfigError{Key: "id2label", Value: labels, Msg: "has two labels: llama.cpp's converter fails on " +
			"them (KeyError: 0, NeoBERT's config is read with string keys)"}
	}
	b, err := newBertArch("neo-bert", h, dir)
	if err != nil {
		return nil, err
	}
	return &neoBert{b}, nil
}

// Params is NeoBert.set_gguf_parameters: BertModel's, then the feed-forward
// length int(2 × intermediate_size / 3), rope base 10000 without scaling,
// the RMS epsilon (norm_eps, default 1e-6) and CLS pooling.
func (m *neoBert) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.bert.Params(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	inter, err := m.h.MustInt("intermediate_size")
	if err != nil {
		return nil, err
	}
	if err := k.u32("feed_forward_length", 2*inter/3); err != nil {
		return nil, err
	}
	k.l.Set(k.key("rope.freq_base"), gguf.Float32(10000))
	k.l.Set(k.key("rope.scaling.type"), gguf.String("none"))
	eps := m.h.get("norm_eps", 1e-6)
	if err := k.f32("attention.layer_norm_rms_epsilon", eps); err != nil {
		return nil, err
	}
	k.l.Set(k.key("pooling_type"), gguf.Uint32(poolingCLS))
	return k.l.KVs(), nil
}

// Filter is NeoBert.filter_tensors: the masked-LM decoder dropped, the
// "model." prefix removed, then BertModel's filter.
func (m *neoBert) Filter(name string) (string, bool) {
	if strings.HasPrefix(name, "decoder.") {
		return "", false
	}
	return m.bert.Filter(strings.TrimPrefix(name, "model."))
}
