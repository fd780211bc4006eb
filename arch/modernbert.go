package arch

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

func init() {
	register(newModernBert, "ModernBertModel", "ModernBertForSequenceClassification")
}

// modernBert is ModernBertModel (conversion/bert.py): BertModel under the
// modern-bert architecture with local/global attention, GPT-2 style BPE
// vocabulary and a "model." prefix on the checkpoints with a head. The
// converter also registers ModernBertForMaskedLM but fails on its
// decoder.bias (see refused).
type modernBert struct {
	*bert
}

func newModernBert(h HParams, dir string) (Model, error) {
	b, err := newBertArch("modern-bert", h, dir)
	if err != nil {
		return nil, err
	}
	return &modernBert{b}, nil
}

// Vocab is ModernBertModel.set_vocab: _set_vocab_gpt2, after the add_*
// flags AdjustVocab puts first.
func (m *modernBert) Vocab() VocabKind { return VocabGPT2 }

// AdjustVocab puts add_bos_token, add_eos_token and add_sep_token (true)
// before the vocabulary, as set_vocab writes them first; a value the
// vocabulary sets again replaces it in that place.
func (m *modernBert) AdjustVocab(kvs []gguf.KV) ([]gguf.KV, error) {
	var l gguf.KVList
	for _, k := range []string{gguf.KeyTokenizerAddBOS, gguf.KeyTokenizerAddEOS, gguf.KeyTokenizerAddSEP} {
		l.Set(k, gguf.Bool(true))
	}
	l.Append(kvs...)
	return l.KVs(), nil
}

// Params is ModernBertModel.set_gguf_parameters: BertModel's, then the
// local attention window, the global-layer period, no rope scaling, the
// vocabulary size and the FFN activation.
func (m *modernBert) Params(ft gguf.FileType) ([]gguf.KV, error) {
	kvs, err := m.bert.Params(ft)
	if err != nil {
		return nil, err
	}
	k := &kv{arch: m.arch}
	k.l.Append(kvs...)
	win, ok := m.h["local_attention"]
	if !ok {
		return nil, &ConfigError{Key: "local_attention", Msg: "is missing"}
	}
	if err := k.u32("attention.sliding_window", win); err != nil {
		return nil, err
	}
	if p := m.h["global_attn_every_n_layers"]; p != nil {
		if err := k.u32("attention.sliding_window_pattern", p); err != nil {
			return nil, err
		}
	}
	k.l.Set(k.key("rope.scaling.type"), gguf.String("none"))
	vs, ok := m.h["vocab_size"]
	if !ok {
		return nil, &ConfigError{Key: "vocab_size", Msg: "is missing"}
	}
	if err := k.u32("vocab_size", vs); err != nil {
		return nil, err
	}
	if act, _ := m.h["hidden_activation"].(string); act != "" {
		k.l.Set(k.key("hidden_activation"), gguf.String(act))
	}
	return k.l.KVs(), nil
}

// Filter is ModernBertModel.filter_tensors: the "model." prefix dropped,
// then BertModel's filter.
func (m *modernBert) Filter(name string) (string, bool) {
	return m.bert.Filter(strings.TrimPrefix(name, "model."))
}
